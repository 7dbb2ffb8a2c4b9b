package shard

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"
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
	kinds     kinds  // live keys and their bytes per algorithm
	stats     stats  // atomics, read without mu
	settleBuf []byte // the keys Sweep gives a ledger's estimates back to

	// view is the index's pages as of its last change, for Prefetch's
	// first pass, which takes no lock (see indexView); viewGen is the
	// index's gen it was made at. Changed under mu, read without it.
	view    atomic.Pointer[indexView]
	viewGen uint32
}

func newShard(hash func([]byte) uint64) *shard { return &shard{hash: hash} }

// resetLocked empties s, keeping its lock, stats and footprint.
func (s *shard) resetLocked() {
	s.index, s.peak, s.cursor = index{}, 0, 0
	s.view.Store(nil)
	s.viewGen = 0
	s.slots, s.keys, s.params, s.ext = slots{}, arena{}, params{}, ext{}
	s.kinds = kinds{}
	s.gen++
}

func (s *shard) lenLocked() int { return s.index.live }

// findLocked returns the slot index holding key.
func (s *shard) findLocked(key []byte, h uint64) (uint32, bool) {
	if len(s.index.tabs) == 0 {
		return 0, false
	}
	t := s.index.page(h)
	h32 := fold(h)
	tag := tagOf(h32)
	for j := home(h32, len(t)); t[j] != 0; j = next(j, len(t)) {
		e := t[j]
		if e>>slotBits == tag && e&slotField != 0 {
			i := e&slotField - 1
			if s.keyIsLocked(s.slots.at(i), key) {
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
	s.index.room(h, s.slotHash) // first, while every slot is in the index: a split rehashes slots
	if s.index.gen != s.viewGen {
		s.view.Store(s.index.view())
		s.viewGen = s.index.gen
	}
	ref, ok := s.keys.add(key)
	if !ok {
		return 0, false
	}
	i := s.slots.alloc()
	sl := s.slots.at(i)
	sl.key, sl.meta = ref, lenField(len(key))<<paramBits
	s.index.put(h, i)
	s.peak = max(s.peak, s.index.live)
	return i, true
}

// slotHash returns the hash of the key in slot i.
func (s *shard) slotHash(i uint32) uint64 {
	sl := s.slots.at(i)
	return s.hash(s.keys.get(sl.key, sl.keyLen()))
}

// keyIsLocked reports whether sl holds key. Comparing the lengths first
// skips the arena's cache line for most keys whose tags collide. A key
// shorter than longKey, as most are, is read from its page here and
// compared by equalKey, without arena.get's call and bytes.Equal's: about
// 35 instructions of a lookup's 190 (a reservation makes four).
func (s *shard) keyIsLocked(sl *slot, key []byte) bool {
	n := sl.keyLen()
	if n != lenField(len(key)) {
		return false
	}
	if n < 8 || n > 32 {
		return bytes.Equal(s.keys.get(sl.key, n), key)
	}
	off := int(sl.key & (arenaPage - 1))
	a := s.keys.pages[sl.key>>arenaPageBits][off : off+len(key) : off+len(key)]
	return equalKey(a, key)
}

// equalKey is bytes.Equal(a, b) for a and b of one length of 8 to 32
// bytes, compared as two or four words that may overlap.
func equalKey(a, b []byte) bool {
	n := len(a)
	if n != len(b) || n < 8 {
		return false
	}
	le := binary.LittleEndian
	if le.Uint64(a) != le.Uint64(b) || le.Uint64(a[n-8:]) != le.Uint64(b[n-8:]) {
		return false
	}
	return n <= 16 || le.Uint64(a[8:]) == le.Uint64(b[8:]) && le.Uint64(a[n-16:]) == le.Uint64(b[n-16:])
}

// removeLocked frees the key in slot i, whose hash is h.
func (s *shard) removeLocked(i uint32, h uint64) {
	s.index.remove(h, i)
	sl := s.slots.at(i)
	s.unbindLocked(sl)
	s.keys.drop(sl.key, sl.keyLen())
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
