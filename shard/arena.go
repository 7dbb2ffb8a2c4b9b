package shard

import "encoding/binary"

// Arena pages start at arenaFirstPage bytes and double up to arenaPage, so a
// shard with few keys holds little, and the unused tail of a shard's last
// page stays small: 64 KiB pages left 4 bytes a key unused at 1M keys over
// 256 shards, 8 KiB pages 1.6 bytes and 4 KiB pages 0.6 (the fuller pages
// cost 10% more heap objects at 10M keys: BenchmarkGC). A key
// over a quarter of arenaPage gets a page of its own, exactly its size, and
// the page small keys go to stays open.
const (
	arenaFirstPage = 1 << 10
	arenaPage      = 1 << arenaPageBits
	arenaPageBits  = 12 // 4 KiB
	arenaMaxPages  = 1 << (32 - arenaPageBits)
)

// arena holds key bytes in pointer-free pages. A key is stored as its bytes,
// after their uvarint length if it has longKey bytes or more, and named by a
// ref: page<<arenaPageBits | offset.
// Ref 0 is never handed out, so a slot can use it to mean "free".
// Space is reclaimed only when the shard rebuilds.
type arena struct {
	pages [][]byte
	cur   int // the page small keys go to
	live  int // bytes of keys still referenced
	size  int // bytes allocated: pages and spare
	spare chunk[byte]
}

// add copies key into the arena and returns its ref, or false if the arena
// is full. A key of longKey bytes or more is stored after its uvarint
// length; a shorter one alone, its length kept in its slot.
func (a *arena) add(key []byte) (uint32, bool) {
	if len(a.pages) == 0 {
		a.newPage(arenaFirstPage)
		a.pages[0] = a.pages[0][:1] // reserve ref 0
	}
	need := storedLen(len(key))
	p := a.cur
	if need > arenaPage/4 || cap(a.pages[p])-len(a.pages[p]) < need {
		if len(a.pages) >= arenaMaxPages {
			return 0, false
		}
		p = a.newPage(need)
	}
	off := len(a.pages[p])
	if len(key) >= longKey {
		a.pages[p] = binary.AppendUvarint(a.pages[p], uint64(len(key)))
	}
	a.pages[p] = append(a.pages[p], key...)
	a.pages[p] = a.pages[p][:off+need] // an empty key takes a byte, so its ref names its own page
	a.live += need
	return uint32(p)<<arenaPageBits | uint32(off), true
}

// storedLen returns the bytes a key of n bytes takes in the arena.
func storedLen(n int) int {
	if n >= longKey {
		return uvarintLen(uint64(n)) + n
	}
	return max(n, 1)
}

// newPage adds a page for a key of need bytes and returns its index: a page
// of its own for a large key, else the next small-key page, twice the last up
// to arenaPage, and then cut from a chunk.
func (a *arena) newPage(need int) int {
	size := need
	if need <= arenaPage/4 {
		if len(a.pages) > 0 {
			size = max(need, min(arenaPage, 2*cap(a.pages[a.cur])))
		}
		a.cur = len(a.pages)
	}
	var page []byte
	if size == arenaPage {
		var allocated int
		page, allocated = a.spare.page(size, a.size)
		a.size += allocated
	} else {
		page = make([]byte, size)
		a.size += size
	}
	a.pages = append(a.pages, page[:0])
	return len(a.pages) - 1
}

// get returns the key named by ref whose slot's key length field is n. The
// bytes are the arena's: copy to keep them.
func (a *arena) get(ref, n uint32) []byte {
	page := a.pages[ref>>arenaPageBits][ref&(arenaPage-1):]
	if n < longKey {
		return page[:n]
	}
	m, k := binary.Uvarint(page)
	return page[k : k+int(m)]
}

// drop records that the key named by ref, with key length field n, is no
// longer referenced.
func (a *arena) drop(ref, n uint32) {
	a.live -= storedLen(len(a.get(ref, n)))
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}
