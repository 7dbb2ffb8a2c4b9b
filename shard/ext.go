package shard

import "math/bits"

// Counter blocks hold a Slide key's counters once they outgrow its slot.
// A block is 4<<class words: a header word (class | n<<8) then up to
// (4<<class)-1 counters. Blocks live in pointer-free pages and are named by a
// ref: page<<13 | word offset. Freed blocks go on a free list per class.
//
// A window spans at most MaxCounters+1 counters, but a key re-parameterised
// from a fine to a coarse width keeps its fine counters until they leave the
// window, so a block may need more. Blocks larger than a page get a page of
// their own, up to a class that holds a counter for every second of the
// longest window.
//
// Shared pages start at extFirstPage words and double up to extPage, so a
// shard with few long-window keys holds little.
const (
	extFirstPage = 512  // words (4 KiB)
	extPage      = 8192 // words per full-size shared page (64 KiB)
	extPageBits  = 13   // log2(extPage)
	extClasses   = 28   // 4 … 4<<27 words
)

type ext struct {
	pages [][]uint64
	free  [extClasses][]uint32
	words int // words in live blocks
	size  int // words in pages
	grow  int // words in the last shared page; the next holds twice as many
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
	} else {
		ref = e.carve(4 << c)
	}
	e.word(ref)[0] = uint64(c)
	return ref
}

// carve cuts a new block of size words from the last page, or from a new one.
func (e *ext) carve(size int) uint32 {
	p := len(e.pages) - 1
	if p < 0 || cap(e.pages[p])-len(e.pages[p]) < size {
		e.grow = min(extPage, max(extFirstPage, 2*e.grow))
		n := max(size, e.grow)
		e.pages = append(e.pages, make([]uint64, 0, n))
		e.size += n
		p++
	}
	off := len(e.pages[p])
	e.pages[p] = e.pages[p][:off+size]
	return uint32(p)<<extPageBits | uint32(off)
}

func (e *ext) word(ref uint32) []uint64 { return e.pages[ref>>extPageBits][ref&(extPage-1):] }

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
