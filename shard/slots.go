package shard

import (
	"math/bits"

	"github.com/rlstore/rlstore/window"
)

// slot is one key's fixed-size record: 24 bytes and no pointers, so the
// garbage collector never scans the store.
type slot struct {
	key   uint32       // arena ref of the key; 0 marks a free slot
	meta  uint32       // the key's length<<paramBits | its id in the shard's params table
	state window.State // the algorithm's state; Slide keeps counters inline or in ext
}

// A slot keeps its key's length, so the arena needs no length byte for keys
// under longKey bytes (1 byte a key, 2% of what a key costs). Param ids fit
// in the rest: a shard has fewer than 2^24 slots, and each id in use names
// the parameters of at least one of them.
const (
	paramBits  = 24
	paramField = 1<<paramBits - 1
	longKey    = 255 // key length field of a key of 255 bytes or more: the arena holds its length
)

// param returns the id of sl's parameters; 0 means none.
func (sl *slot) param() uint32 { return sl.meta & paramField }

// setParam sets the id of sl's parameters.
func (sl *slot) setParam(id uint32) { sl.meta = sl.meta&^paramField | id }

// keyLen returns sl's key length field: the length, or longKey.
func (sl *slot) keyLen() uint32 { return sl.meta >> paramBits }

// lenField returns the key length field for a key of n bytes.
func lenField(n int) uint32 { return uint32(min(n, longKey)) }

// slotBytes is the size of one slot in memory.
const slotBytes = 24

// Slot pages start small and double, so that a shard with a few keys holds a
// few hundred bytes rather than a whole page: the first three pages hold 32,
// 32 and 64 slots, 128 in all, and every later page holds slotsPerPage
// (3 KiB). Small pages keep the unused tail of a shard's last page small:
// with 24 KiB pages, 1M keys over 256 shards left a quarter of the slots
// empty (8 bytes a key); with 6 KiB pages 0.9 bytes, with 3 KiB 0.4. At 10M
// keys BenchmarkGC counted 39.5k heap objects against 36k with 6 KiB.
const (
	slotsPerPage = 128
	firstPage    = 32
	smallPages   = 3 // pages before the first full-size one: log2(slotsPerPage/firstPage)+1
)

// slots is a growable array of slots in pages, with a free list. Pages never
// move, so a pointer from at stays valid until the slot is released. A
// full-size page is named by a pointer to its array, not a slice: 8 bytes a
// page rather than 24 (0.13 B a key at 1M keys), and at needs no bounds
// check within it.
type slots struct {
	small     [smallPages][]slot    // the first pages: firstPage, firstPage, 2*firstPage slots
	pages     []*[slotsPerPage]slot // the full-size pages: slot i >= slotsPerPage is in pages[i/slotsPerPage-1]
	free      []uint32              // indexes of free slots, reused first
	next      uint32                // first never-used index
	size      int                   // slots in pages
	allocated int                   // slots allocated: in pages and spare
	spare     chunk[slot]
}

// at returns the slot with index i.
func (s *slots) at(i uint32) *slot {
	if i >= slotsPerPage {
		return &s.pages[i/slotsPerPage-1][i%slotsPerPage]
	}
	if i < firstPage {
		return &s.small[0][i]
	}
	b := bits.Len32(i) - 1 // i is in [1<<b, 2<<b): small page b-log2(firstPage)+1
	return &s.small[b-4][i-1<<b]
}

// alloc returns the index of a zeroed slot.
func (s *slots) alloc() uint32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	if int(s.next) == s.size {
		s.addPage()
	}
	s.next++
	return s.next - 1
}

// addPage adds the next page: a small one while there are few, else a full
// one cut from a chunk.
func (s *slots) addPage() {
	n := min(slotsPerPage, max(firstPage, s.size))
	if n < slotsPerPage {
		s.small[bits.Len(uint(s.size/firstPage))] = make([]slot, n) // sizes 0, 32, 64: pages 0, 1, 2
		s.allocated += n
	} else {
		page, allocated := s.spare.page(n, s.size)
		s.allocated += allocated
		s.pages = append(s.pages, (*[slotsPerPage]slot)(page))
	}
	s.size += n
}

// release zeroes slot i and puts it on the free list.
func (s *slots) release(i uint32) {
	*s.at(i) = slot{}
	s.free = append(s.free, i)
}

// bytes returns the bytes held by pages and the free list.
func (s *slots) bytes() int { return s.allocated*slotBytes + cap(s.free)*4 }
