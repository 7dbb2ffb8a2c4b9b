package shard

import "unsafe"

// A decision's lookup is three memory reads, each needing the one before:
// the index entry names the slot, and the slot the key's bytes and its
// counter block. With 100k keys or more they miss the caches, and each
// waited for costs 60–150 ns on this project's VM, more than the rest of
// the decision. Prefetch lets a pipelined batch pay for them once, side by
// side: it walks the batch's keys three times, each pass asking for the
// lines the next one reads (index entries, then slots, then key bytes and
// counter blocks), so that the misses of 16 lookups overlap instead of
// queueing. The second and third steps take the shard's lock, as every read
// of a shard does; the first reads only an indexView, which needs none, and
// saves a lock a decision. Prefetches do not wait for their lines, so the
// lock's barrier does not wait for them either.

const (
	prefetchWidth = 16 // how many lookups Prefetch overlaps at once
	// prefetchKeys is the smallest Map Prefetch works for: about 2 MB of
	// keys' lines, one core's L2 cache here. Measured with
	// BenchmarkDecidePipelined: at 1k keys the passes cost 60 ns a decision
	// and saved nothing; at 100k keys they saved 235 ns, at 1M 740 ns.
	prefetchKeys = 32 << 10
)

// Prefetch readies the lookups of keys that are about to be decided, so
// that they find their memory in the caches. It changes nothing and decides
// nothing: keys that are absent, or change before they are decided, only
// make it wasted work. A Map of fewer than prefetchKeys keys skips it: its
// lines stay in the caches, and the passes would cost more than they save.
//
// hashes, if not nil, must be as long as keys: Prefetch sets hashes[i] to
// the hash of keys[i], which DecideHashed then takes instead of hashing the
// key again.
func (m *Map) Prefetch(keys [][]byte, hashes []uint64) {
	skip := m.keys.Load() < m.prefetchFrom
	if skip && hashes == nil {
		return
	}
	var hs [prefetchWidth]uint64
	for start := 0; start < len(keys); start += prefetchWidth {
		batch := keys[start:min(len(keys), start+prefetchWidth)]
		h := hs[:len(batch)]
		for i, k := range batch {
			h[i] = m.hash(k)
		}
		if hashes != nil {
			copy(hashes[start:], h)
		}
		if !skip {
			m.prefetch(h)
		}
	}
}

// prefetch runs the three passes over the keys of at most prefetchWidth
// hashes.
func (m *Map) prefetch(hs []uint64) {
	var slot [prefetchWidth]uint32 // slot+1 of the first entry with the key's tag; 0: none
	for _, h := range hs {         // without the lock: see indexView
		if v := m.shardFor(h).view.Load(); v != nil {
			t := v.tabs[h>>v.shift]
			prefetch(uintptr(unsafe.Pointer(&t[home(fold(h), len(t))])))
		}
	}
	for i := range hs {
		s := m.shardFor(hs[i])
		s.mu.Lock()
		slot[i] = s.prefetchSlotLocked(hs[i])
		s.mu.Unlock()
	}
	for i := range hs {
		if slot[i] != 0 {
			s := m.shardFor(hs[i])
			s.mu.Lock()
			s.prefetchStateLocked(slot[i] - 1)
			s.mu.Unlock()
		}
	}
}

// prefetchLocked asks for the line of h's home entry.
func (x *index) prefetchLocked(h uint64) {
	if len(x.tabs) == 0 {
		return
	}
	t := x.page(h)
	prefetch(uintptr(unsafe.Pointer(&t[home(fold(h), len(t))])))
}

// prefetchSlotLocked finds the first entry on h's probe whose tag matches,
// asks for its slot's lines, and returns its slot+1, or 0 if there is none.
func (s *shard) prefetchSlotLocked(h uint64) uint32 {
	if len(s.index.tabs) == 0 {
		return 0
	}
	t := s.index.page(h)
	h32 := fold(h)
	tag := tagOf(h32)
	for j, n := home(h32, len(t)), 0; t[j] != 0 && n < len(t); j, n = next(j, len(t)), n+1 {
		if e := t[j]; e>>slotBits == tag && e&slotField != 0 {
			sl := uintptr(unsafe.Pointer(s.slots.at(e&slotField - 1)))
			prefetch(sl)
			prefetch(sl + slotBytes - 1) // a slot may straddle two lines
			return e & slotField
		}
	}
	return 0
}

// prefetchStateLocked asks for the lines of slot i's key bytes and of its
// counter block, if it has one.
func (s *shard) prefetchStateLocked(i uint32) {
	if i >= s.slots.next {
		return // freed and gone since the last pass
	}
	sl := s.slots.at(i)
	if ref := sl.key; ref != 0 {
		if p := int(ref >> arenaPageBits); p < len(s.keys.pages) {
			if page := s.keys.pages[p]; int(ref&(arenaPage-1)) < len(page) {
				prefetch(uintptr(unsafe.Pointer(&page[ref&(arenaPage-1)])))
			}
		}
	}
	if sl.state[0] != extMark {
		return
	}
	ref, class := uint32(sl.state[1]), int(sl.state[1]>>32)
	if p := int(ref >> extPageBits); p < len(s.ext.pages) {
		if w := s.ext.pages[p]; int(ref&(extPage-1)) < len(w) {
			prefetchBlock(w[ref&(extPage-1):], class)
		}
	}
}

// prefetchBlock asks for the lines of the counter block of class c at the
// start of w, all of which a decision reads, up to prefetchBlockWords words.
// It reads nothing of the block: its header would be a miss to wait for.
func prefetchBlock(w []uint64, c int) {
	n := min(4<<min(c, extClasses), len(w), prefetchBlockWords)
	start := uintptr(unsafe.Pointer(&w[0]))
	for a := start &^ 63; a < start+uintptr(8*n); a += 64 {
		prefetch(a)
	}
}

// prefetchBlockWords bounds the words of a counter block Prefetch asks for:
// 16 lines, a minute's window of per-second counters.
const prefetchBlockWords = 128
