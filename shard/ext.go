package shard

import "math/bits"

// Counter blocks hold a Slide key's counters once they outgrow its slot.
// A block is 4<<class words: a header word (class | n<<8) then up to
// (4<<class)-1 counters. Blocks live in pointer-free pages and are named by a
// ref: page<<13 | word offset. Freed blocks go on a free list per class.
const (
	extPage    = 8192 // words per page (64 KiB)
	extClasses = 11   // 4 … 4096 words: room for a full 3600-counter window
)

type ext struct {
	pages [][]uint64
	free  [extClasses][]uint32
	words int // words in live blocks
}

// classFor returns the smallest class whose blocks hold n counters.
func classFor(n int) int {
	return max(0, bits.Len(uint(n))-2) // 4<<c - 1 >= n
}

// alloc returns a block for n counters.
func (e *ext) alloc(n int) (ref uint32) {
	c := classFor(n)
	e.words += 4 << c
	if f := e.free[c]; len(f) > 0 {
		ref, e.free[c] = f[len(f)-1], f[:len(f)-1]
		e.word(ref)[0] = uint64(c)
		return ref
	}
	size := 4 << c
	p := len(e.pages) - 1
	if p < 0 || cap(e.pages[p])-len(e.pages[p]) < size {
		e.pages = append(e.pages, make([]uint64, 0, extPage))
		p++
	}
	off := len(e.pages[p])
	e.pages[p] = e.pages[p][:off+size]
	ref = uint32(p)<<13 | uint32(off)
	e.word(ref)[0] = uint64(c)
	return ref
}

func (e *ext) word(ref uint32) []uint64 { return e.pages[ref>>13][ref&(extPage-1):] }

// counters returns the block's counters, with its capacity as the slice's cap.
func (e *ext) counters(ref uint32) []uint64 {
	w := e.word(ref)
	c, n := int(w[0]&0xff), int(w[0]>>8)
	return w[1 : 1+n : 4<<c]
}

// setLen records that the block now holds n counters.
func (e *ext) setLen(ref uint32, n int) {
	w := e.word(ref)
	w[0] = w[0]&0xff | uint64(n)<<8
}

// release returns the block to its class's free list.
func (e *ext) release(ref uint32) {
	c := int(e.word(ref)[0] & 0xff)
	e.words -= 4 << c
	e.free[c] = append(e.free[c], ref)
}
