package shard

import (
	"bytes"
	"sync"

	"github.com/rlstore/rlstore/window"
)

// shard is one lock stripe: an index from key hash to slot, the slots, the key
// bytes and the counter blocks. Everything in it is guarded by mu.
type shard struct {
	hash      func([]byte) uint64 // set once by New
	mu        sync.Mutex          // guards every field below
	index     map[uint64]uint32   // key hash → slot; pointer-free
	overflow  map[string]uint32   // keys whose hash collides with an indexed key
	peak      int                 // largest len(index) since the last rebuild
	slots     slots
	keys      arena
	params    params
	ext       ext
	cursor    uint32 // where the next Sweep of this shard resumes
	gen       uint16 // bumped whenever slots move (rebuild, reset), so Scan can restart
	footprint int64  // footprintLocked as last added to Map.bytes
	stats     stats  // atomics, read without mu
}

func newShard(hash func([]byte) uint64) *shard {
	return &shard{index: make(map[uint64]uint32), hash: hash}
}

// resetLocked empties s, keeping its lock, stats and footprint.
func (s *shard) resetLocked() {
	s.index, s.overflow, s.peak, s.cursor = make(map[uint64]uint32), nil, 0, 0
	s.slots, s.keys, s.params, s.ext = slots{}, arena{}, params{}, ext{}
	s.gen++
}

func (s *shard) lenLocked() int { return len(s.index) + len(s.overflow) }

// findLocked returns the slot index holding key.
func (s *shard) findLocked(key []byte, h uint64) (uint32, bool) {
	if i, ok := s.index[h]; ok && bytes.Equal(s.keys.get(s.slots.at(i).key), key) {
		return i, true
	}
	if len(s.overflow) == 0 {
		return 0, false
	}
	i, ok := s.overflow[string(key)]
	return i, ok
}

// insertLocked stores a new key with an empty state and returns its slot index,
// or false if the shard cannot hold more keys.
func (s *shard) insertLocked(key []byte, h uint64) (uint32, bool) {
	ref, ok := s.keys.add(key)
	if !ok {
		return 0, false
	}
	i := s.slots.alloc()
	s.slots.at(i).key = ref
	if _, taken := s.index[h]; taken {
		if s.overflow == nil {
			s.overflow = make(map[string]uint32)
		}
		s.overflow[string(key)] = i
	} else {
		s.index[h] = i
		s.peak = max(s.peak, len(s.index))
	}
	return i, true
}

// removeLocked frees the key in slot i, whose hash is h.
func (s *shard) removeLocked(i uint32, h uint64) {
	sl := s.slots.at(i)
	if j, ok := s.index[h]; ok && j == i {
		delete(s.index, h)
	} else {
		delete(s.overflow, string(s.keys.get(sl.key)))
	}
	if sl.param != 0 {
		if s.params.get(sl.param).Kind == window.KindSlide {
			s.freeCountersLocked(sl)
		}
		s.params.release(sl.param)
	}
	s.keys.drop(sl.key)
	s.slots.release(i)
}

// indexEntryBytes estimates what one entry costs in a Go map[uint64]uint32.
const indexEntryBytes = 26

// footprintLocked estimates the bytes s holds for keys: pages and index entries.
func (s *shard) footprintLocked() int64 {
	n := s.keys.size + s.slots.bytes() + s.ext.size*8
	return int64(n + (len(s.index)+len(s.overflow))*indexEntryBytes)
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
