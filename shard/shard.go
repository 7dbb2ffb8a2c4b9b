package shard

import (
	"bytes"
	"sync"
)

// shard is one lock stripe: an index from key hash to slot, the slots, the key
// bytes and the counter blocks. Everything in it is guarded by mu.
type shard struct {
	hash      func([]byte) uint64 // set once by New
	mu        sync.Mutex          // guards every field below
	index     index               // key hash → slot; pointer-free
	peak      int                 // most keys since the last rebuild
	slots     slots
	keys      arena
	params    params
	ext       ext
	cursor    uint32 // where the next Sweep of this shard resumes
	gen       uint16 // bumped whenever slots move (rebuild, reset), so Scan can restart
	footprint int64  // footprintLocked as last added to Map.bytes
	dirty     dirty  // changes since the last DrainDirty, for the append-only log
	stats     stats  // atomics, read without mu
}

func newShard(hash func([]byte) uint64) *shard { return &shard{hash: hash} }

// resetLocked empties s, keeping its lock, stats and footprint.
func (s *shard) resetLocked() {
	s.index, s.peak, s.cursor = index{}, 0, 0
	s.slots, s.keys, s.params, s.ext = slots{}, arena{}, params{}, ext{}
	s.gen++
}

func (s *shard) lenLocked() int { return s.index.live }

// findLocked returns the slot index holding key.
func (s *shard) findLocked(key []byte, h uint64) (uint32, bool) {
	t := s.index.table
	if len(t) == 0 {
		return 0, false
	}
	h32 := fold(h)
	tag := tagOf(h32)
	for j := home(h32, len(t)); t[j] != 0; j = s.index.next(j) {
		e := t[j]
		if e>>slotBits == tag && e&slotField != 0 {
			i := e&slotField - 1
			if bytes.Equal(s.keys.get(s.slots.at(i).key), key) {
				return i, true
			}
		}
	}
	return 0, false
}

// insertLocked stores a new key with an empty state and returns its slot index,
// or false if the shard cannot hold more keys.
func (s *shard) insertLocked(key []byte, h uint64) (uint32, bool) {
	if len(s.slots.free) == 0 && s.slots.next >= maxSlots {
		return 0, false
	}
	ref, ok := s.keys.add(key)
	if !ok {
		return 0, false
	}
	s.roomLocked() // before the new slot exists: a rehash walks the slots
	i := s.slots.alloc()
	s.slots.at(i).key = ref
	s.index.put(fold(h), i)
	s.peak = max(s.peak, s.index.live)
	return i, true
}

// roomLocked makes room in the index for one more entry: when it is full, it
// rehashes every key into a table twice as large, or the same size when
// tombstones rather than keys fill it.
func (s *shard) roomLocked() {
	if !s.index.full() {
		return
	}
	n := len(s.index.table)
	if (s.index.live+1)*8 > n*3 {
		n = max(8, 2*n)
	}
	s.rehashLocked(index{table: make([]uint32, n)})
}

// rehashLocked moves every entry of s's index into x, which becomes the index.
// It walks the slots rather than the old table, so that slots and keys are
// read in the order they were allocated instead of at random.
func (s *shard) rehashLocked(x index) {
	for i := range s.slots.next {
		if ref := s.slots.at(i).key; ref != 0 {
			x.put(fold(s.hash(s.keys.get(ref))), i)
		}
	}
	s.index = x
}

// removeLocked frees the key in slot i, whose hash is h.
func (s *shard) removeLocked(i uint32, h uint64) {
	s.index.remove(fold(h), i)
	sl := s.slots.at(i)
	if sl.param != 0 {
		if hasCounters(s.params.get(sl.param).Kind) {
			s.freeCountersLocked(sl)
		}
		s.params.release(sl.param)
	}
	s.keys.drop(sl.key)
	s.slots.release(i)
}

// footprintLocked counts the bytes s holds for keys: its pages and index.
func (s *shard) footprintLocked() int64 {
	return int64(s.keys.size + s.slots.bytes() + s.ext.size*8 + s.index.bytes())
}

// accountLocked brings the Map's byte count up to date with s's footprint.
// Most decisions change nothing, and skipping the shared atomic then keeps
// the shards from contending on its cache line.
func (m *Map) accountLocked(s *shard) {
	if f := s.footprintLocked(); f != s.footprint {
		m.bytes.Add(f - s.footprint)
		s.footprint = f
	}
}
