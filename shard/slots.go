package shard

import "github.com/rlstore/rlstore/window"

// slotsPerPage is how many slots one page holds (24 KiB).
const slotsPerPage = 1024

// slot is one key's fixed-size record: 24 bytes and no pointers, so the
// garbage collector never scans the store.
type slot struct {
	key   uint32       // arena ref of the key; 0 marks a free slot
	param uint32       // id in the shard's params table
	state window.State // the algorithm's state; Slide keeps counters inline or in ext
}

// slots is a growable array of slots in fixed-size pages with a free list.
// Pages are held by pointer so that growing never copies them: a slice of page
// values would reallocate (and double) the whole store under the shard lock.
type slots struct {
	pages []*[slotsPerPage]slot
	free  []uint32 // indexes of free slots, reused first
	next  uint32   // first never-used index
}

// at returns the slot with index i.
func (s *slots) at(i uint32) *slot { return &s.pages[i/slotsPerPage][i%slotsPerPage] }

// alloc returns the index of a zeroed slot.
func (s *slots) alloc() uint32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	if int(s.next/slotsPerPage) == len(s.pages) {
		s.pages = append(s.pages, new([slotsPerPage]slot))
	}
	s.next++
	return s.next - 1
}

// release zeroes slot i and puts it on the free list.
func (s *slots) release(i uint32) {
	*s.at(i) = slot{}
	s.free = append(s.free, i)
}

// bytes returns the bytes held by pages and the free list.
func (s *slots) bytes() int {
	return len(s.pages)*slotsPerPage*slotBytes + cap(s.free)*4
}

// slotBytes is the size of one slot in memory.
const slotBytes = 24
