package shard

import "math/bits"

// index maps key hashes to slots. It is extendible hashing over pages: a
// directory, indexed by the hash's top bits, names the page a key's entry
// lives in, and each page is an open-addressed table of 4-byte entries,
// tag<<24 | slot+1, probed linearly from a home position taken from the
// hash's folded high bits; the tag is its low byte, so a probe compares keys
// only for entries whose tag matches. Keys with equal hashes are simply
// several entries: the key bytes decide, so a collision never merges two keys.
//
// A page that reaches 7/8 full grows by a quarter, rehashing only its own
// keys, and past pageEntries splits in two by one more bit of the hash. So
// pages stay 70–87.5% full: about 5 bytes a key at any size, where one
// power-of-two table per shard swung between 37% and 75% full (5–11 bytes a
// key, 8.4 at 1M keys over 256 shards), and growing rehashed a whole shard
// under the lock (1.8 ms for a 49k-key shard) and left the old table behind
// as garbage. Now a grow or split rehashes at most maxSplit entries' keys,
// and leaves at most one page behind. A shard's first page has 8 entries.
//
// Go's map[uint64]uint32 was the first design: 17 bytes a slot at a load that
// swings between 44% and 88%, 38 bytes a key at 1M keys over 256 shards.
type index struct {
	dir   []uint32   // page of each value of the hash's top depth bits
	tabs  [][]uint32 // pages[dir[k]] for each k: a lookup reads one entry, not two
	shift uint8      // 64 - depth: a key's page is dir[h>>shift]
	pages [][]uint32 // open-addressed tables
	meta  []pageMeta // per page
	live  int        // entries naming a slot
	dead  int        // tombstones
	size  int        // entries in pages
	gen   uint32     // bumped whenever tabs is made anew
}

// pageMeta describes one page.
type pageMeta struct {
	used  uint32 // entries naming a slot, and tombstones
	dead  uint32 // tombstones
	depth uint8  // top bits of the hash that every key in the page shares
}

const (
	slotBits  = 24
	slotField = 1<<slotBits - 1
	maxSlots  = slotField - 1 // slot+1 must fit in the slot field
	tombstone = 1 << slotBits // tag 1, no slot: a deleted entry probes continue past

	firstEntries = 8
	pageEntries  = 8192 // a page this large splits rather than grows (32 KiB)
	// maxDepth bounds the directory at 64K entries a shard. A page whose keys
	// share their top maxDepth bits cannot split, so it keeps growing
	// instead; only forced collisions (tests) or keys crafted for it get
	// there.
	maxDepth = 16
	maxSplit = pageEntries + pageEntries/4 // the largest page that splits
)

// fold reduces a key hash to the 32 bits a page uses. Mixing in the low
// half keeps small test hashes apart, and the shard bits, constant within a
// shard, are mixed with random high bits.
func fold(h uint64) uint32 { return uint32(h>>32 ^ h) }

func tagOf(h32 uint32) uint32 { return h32 & 0xff }

// home returns where h32's probe starts in a table of n entries.
func home(h32 uint32, n int) int { return int(uint64(h32) * uint64(n) >> 32) }

// pageFill is how many of a page's n entries may be used before it grows.
func pageFill(n int) int { return n - n/8 }

// grown returns the size a page of n entries grows to: twice as large while
// it is small, then a quarter larger, in whole cache lines, so that a page
// is between 70% and 87.5% full once it has a few hundred keys.
func grown(n int) int {
	if n < 256 {
		return 2 * n
	}
	return (n + n/4 + 15) &^ 15
}

// next returns the entry after j in a table of n entries, wrapping.
func next(j, n int) int {
	if j++; j == n {
		return 0
	}
	return j
}

// page returns the table holding h's entry; the index must not be empty.
func (x *index) page(h uint64) []uint32 { return x.tabs[h>>x.shift] }

// pageOf returns the number of the page holding h's entry.
func (x *index) pageOf(h uint64) int { return int(x.dir[h>>x.shift]) }

// put adds an entry for slot i with hash h, without checking for room.
func (x *index) put(h uint64, i uint32) {
	x.putPage(x.pageOf(h), fold(h), i)
	x.live++
}

func (x *index) putPage(p int, h32, i uint32) {
	t := x.pages[p]
	j := home(h32, len(t))
	for t[j] != 0 && t[j] != tombstone {
		j = next(j, len(t))
	}
	m := &x.meta[p]
	if t[j] == tombstone {
		m.dead--
		x.dead--
	} else {
		m.used++
	}
	t[j] = tagOf(h32)<<slotBits | (i + 1)
}

// remove deletes the entry for slot i with hash h, which must be present.
func (x *index) remove(h uint64, i uint32) {
	p := x.pageOf(h)
	t, m := x.pages[p], &x.meta[p]
	n := len(t)
	j := home(fold(h), n)
	for t[j]&slotField != i+1 {
		if t[j] == 0 {
			panic("shard: index lost a key") // the shard's structures disagree
		}
		j = next(j, n)
	}
	t[j] = tombstone
	x.live--
	if t[next(j, n)] != 0 {
		m.dead++
		x.dead++
		return
	}
	// The probe ends here, so the tombstones before it end nothing: clear them.
	t[j] = 0
	m.used--
	for j = (j + n - 1) % n; t[j] == tombstone; j = (j + n - 1) % n {
		t[j] = 0
		m.used--
		m.dead--
		x.dead--
	}
}

// room makes room in h's page for one more entry, growing, cleaning or
// splitting it as needed. hashOf returns the hash of the key in a slot.
func (x *index) room(h uint64, hashOf func(uint32) uint64) {
	if len(x.pages) == 0 {
		x.dir, x.shift = []uint32{0}, 64
		x.addPage(firstEntries, 0)
		x.retab()
	}
	for changed := false; ; changed = true {
		p := x.pageOf(h)
		n, m := len(x.pages[p]), x.meta[p]
		switch {
		case int(m.used) < pageFill(n):
			if changed {
				x.retab()
			}
			return
		case n < pageEntries:
			x.rehash(p, x.newTable(grown(n)), hashOf)
		case int(m.dead)*4 >= int(m.used):
			x.rehash(p, x.newTable(n), hashOf)
		case !x.split(p, hashOf):
			x.rehash(p, x.newTable(grown(n)), hashOf)
		}
	}
}

// addPage appends a table of n entries whose keys share depth top bits.
func (x *index) addPage(n int, depth uint8) int {
	x.pages = append(x.pages, x.newTable(n))
	x.meta = append(x.meta, pageMeta{depth: depth})
	return len(x.pages) - 1
}

// newTable returns an empty table of n entries, counted in size until rehash
// or split replaces it.
func (x *index) newTable(n int) []uint32 {
	x.size += n
	return make([]uint32, n)
}

// rehash moves page p's entries into t, which becomes page p.
func (x *index) rehash(p int, t []uint32, hashOf func(uint32) uint64) {
	old, m := x.pages[p], x.meta[p]
	x.size -= len(old)
	x.pages[p], x.meta[p] = t, pageMeta{depth: m.depth}
	x.dead -= int(m.dead)
	for _, e := range old {
		if e&slotField != 0 {
			x.putPage(p, fold(hashOf(e&slotField-1)), e&slotField-1)
		}
	}
}

// split moves about half of page p's keys to a new page, by one more bit of
// their hashes, doubling the directory if p's keys already share as many bits
// as it uses. It reports false if p's keys share their top maxDepth bits.
func (x *index) split(p int, hashOf func(uint32) uint64) bool {
	t := x.pages[p]
	if len(t) > maxSplit {
		return false // a page that grew because it could not split
	}
	var first, differ uint64
	seen := false
	for _, e := range t {
		if e&slotField != 0 {
			h := hashOf(e&slotField - 1)
			if !seen {
				first, seen = h, true
			}
			differ |= h ^ first
		}
	}
	if bits.LeadingZeros64(differ) >= maxDepth {
		return false
	}
	depth := x.meta[p].depth
	if depth == 64-x.shift {
		x.growDir()
	}
	keys := make([]uint32, 0, x.meta[p].used) // p's keys while p is refilled
	for _, e := range t {
		if e&slotField != 0 {
			keys = append(keys, e&slotField-1)
		}
	}
	half := (grown(len(t))/2 + 15) &^ 15
	q := x.addPage(half, depth+1)
	x.retarget(p, q, depth)
	x.size -= len(t)
	x.pages[p] = x.newTable(half)
	x.dead -= int(x.meta[p].dead)
	x.meta[p] = pageMeta{depth: depth + 1}
	for _, i := range keys {
		h := hashOf(i)
		x.putPage(x.pageOf(h), fold(h), i)
	}
	return true
}

// retarget points the second half of the directory entries naming page p,
// whose keys share depth bits, at page q.
func (x *index) retarget(p, q int, depth uint8) {
	span := 1 << (64 - x.shift - depth) // entries naming p: a contiguous run
	k := 0
	for int(x.dir[k]) != p {
		k += span
	}
	for j := k + span/2; j < k+span; j++ {
		x.dir[j] = uint32(q)
	}
}

// growDir doubles the directory, using one more bit of the hash.
func (x *index) growDir() {
	d := make([]uint32, 2*len(x.dir))
	for k, p := range x.dir {
		d[2*k], d[2*k+1] = p, p
	}
	x.dir = d
	x.shift--
}

// sized returns an empty index for about n keys, which fill its tables about half.
func sized(n int) index {
	if n == 0 {
		return index{}
	}
	x := index{shift: 64}
	for (2*n)>>(64-x.shift) > pageEntries && 64-x.shift < maxDepth {
		x.shift--
	}
	size := max(firstEntries, ((2*n)>>(64-x.shift)+15)&^15)
	x.dir = make([]uint32, 1<<(64-x.shift))
	for k := range x.dir {
		x.dir[k] = uint32(x.addPage(size, 64-x.shift))
	}
	x.retab()
	return x
}

// retab points tabs at the pages dir names, after pages or dir changed. It
// makes a new tabs rather than refilling the old, which an indexView may
// still show to Prefetch.
func (x *index) retab() {
	tabs := make([][]uint32, len(x.dir))
	for k, p := range x.dir {
		tabs[k] = x.pages[p]
	}
	x.tabs = tabs
	x.gen++
}

// indexView is the part of an index a lookup's first step reads: which
// page holds a hash's entry. A view is never changed once made, so that
// Prefetch's first pass reads it without the shard's lock and only asks
// for the line of an entry, which it does not read: a view a change has
// made stale only makes it ask for a line no lookup reads.
type indexView struct {
	tabs  [][]uint32
	shift uint8
}

// view returns a view of x as it is.
func (x *index) view() *indexView { return &indexView{tabs: x.tabs, shift: x.shift} }

// bytes returns the bytes held by pages and the directory.
func (x *index) bytes() int {
	return x.size*4 + len(x.dir)*(4+24) + len(x.meta)*pageMetaBytes
}

const pageMetaBytes = 12 // unsafe.Sizeof(pageMeta{})
