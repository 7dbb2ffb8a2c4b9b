package shard

import "github.com/rlstore/rlstore/window"

// A Slide key keeps its counters, and a Log key its entries, the same way:
// neither is ever 0 or all ones. A key keeps up to two counters inline in its slot's state. Beyond that
// the state holds extMark and a ref to a counter block.
const (
	inlineCounters = len(window.State{})
	extMark        = ^uint64(0)
)

// countersLocked returns a Slide slot's counters with room for one more, growing
// their storage if needed.
func (s *shard) countersLocked(sl *slot) []uint64 {
	if sl.state[0] != extMark {
		n := 0
		for n < inlineCounters && sl.state[n] != 0 {
			n++
		}
		if n < inlineCounters {
			return sl.state[:n:inlineCounters]
		}
		return s.moveCountersLocked(sl, sl.state[:n:n], n+1)
	}
	b := s.ext.counters(uint32(sl.state[1]))
	if len(b) < cap(b) {
		return b
	}
	return s.moveCountersLocked(sl, b, len(b)+1)
}

// extRef is the second word of a slot whose counters are in the block ref,
// of class c: the ref, and above it the class, which Prefetch reads to ask
// for the whole block without waiting for its header. Every reader of the
// ref takes its low 32 bits.
func extRef(ref uint32, c int) uint64 { return uint64(ref) | uint64(c)<<32 }

// peekCountersLocked returns a Slide slot's counters without making room.
func (s *shard) peekCountersLocked(sl *slot) []uint64 {
	if sl.state[0] == extMark {
		return s.ext.counters(uint32(sl.state[1]))
	}
	n := 0
	for n < inlineCounters && sl.state[n] != 0 {
		n++
	}
	return sl.state[:n:n]
}

// moveCountersLocked copies counters b into a block for at least want counters.
func (s *shard) moveCountersLocked(sl *slot, b []uint64, want int) []uint64 {
	ref := s.ext.alloc(want)
	nb := s.ext.counters(ref)[:0]
	nb = append(nb, b...)
	s.ext.setLen(ref, len(nb))
	s.freeCountersLocked(sl)
	sl.state = window.State{extMark, extRef(ref, classFor(want))}
	s.extBytesLocked(sl, 8*cap(nb))
	return nb
}

// storeCountersLocked records counters b (as Decide returned them) in sl,
// moving them back inline or to a smaller block when they have shrunk.
func (s *shard) storeCountersLocked(sl *slot, b []uint64) {
	if sl.state[0] != extMark {
		clear(sl.state[len(b):])
		return
	}
	ref := uint32(sl.state[1])
	s.ext.setLen(ref, len(b))
	switch {
	case len(b) <= inlineCounters:
		var st window.State
		copy(st[:], b)
		s.extBytesLocked(sl, -8*cap(s.ext.counters(ref)))
		s.ext.release(ref)
		sl.state = st
	case classFor(len(b)+1) < classFor(cap(b))-1:
		s.moveCountersLocked(sl, b, len(b)+1)
	}
}

// freeCountersLocked releases sl's counter block, if it has one.
func (s *shard) freeCountersLocked(sl *slot) {
	if sl.state[0] == extMark {
		ref := uint32(sl.state[1])
		s.extBytesLocked(sl, -8*cap(s.ext.counters(ref)))
		s.ext.release(ref)
		sl.state = window.State{}
	}
}

// hasCounters reports whether keys of kind k keep a []uint64 of counters
// rather than a fixed-size State (see window.Kind.Counters).
func hasCounters(k window.Kind) bool { return k.Counters() }
