package gateway

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"sync"
)

// overCache is envoyproxy/ratelimit's local over-limit cache
// (LOCAL_CACHE_SIZE_IN_BYTES): the counting-window keys known to be over
// their limit, until their window ends, so that a descriptor that keeps
// asking while over is answered without a trip to the store (or, in a
// cluster, to its owner). A counting window's count only grows until its
// window ends, so an entry stays true; the count it holds decides against
// the limit in force, so a raised limit (a reload, or Envoy's override) is
// not answered from a stale entry.
//
// It is bounded: each shard owns a fixed index and key arena, and a shard
// that fills up starts over empty (an entry lost costs a round trip, as a
// cache miss does). It holds no pointers, so its size costs the GC
// nothing. Its methods are safe for concurrent use; the zero value is not
// usable: see newOverCache.
type overCache struct {
	seed   maphash.Seed
	shards []overShard
	mask   uint64
}

type overShard struct {
	mu    sync.Mutex // guards all below
	index []overSlot // open-addressed; hash 0 is an empty slot
	arena []byte     // the keys of the slots, one after another
	used  int        // slots taken
}

// overSlot is one key known over its limit until end.
type overSlot struct {
	hash     uint64
	end      int64  // the window's end, unix seconds
	count    uint64 // the count seen over the limit
	off, len uint32 // the key in the arena
}

const overSlotBytes = 32 // unsafe.Sizeof(overSlot{})

// minOverCacheBytes is the smallest size that gives every shard room.
const minOverCacheBytes = 64 << 10

// newOverCache returns a cache of about size bytes, or nil if size is 0.
func newOverCache(size int) *overCache {
	if size <= 0 {
		return nil
	}
	size = max(size, minOverCacheBytes)
	n := 16
	for n > 1 && size/n < 64<<10 {
		n /= 2
	}
	per := size / n
	slots := 1 << (bits.Len(uint(per/2/overSlotBytes)) - 1) // half the shard's bytes, a power of two
	c := &overCache{seed: maphash.MakeSeed(), shards: make([]overShard, n), mask: uint64(n - 1)}
	for i := range c.shards {
		c.shards[i].index = make([]overSlot, slots)
		c.shards[i].arena = make([]byte, 0, per-slots*overSlotBytes)
	}
	return c
}

func (c *overCache) hash(key []byte) uint64 {
	return maphash.Bytes(c.seed, key) | 1 // never the empty slot's 0
}

// over reports whether key is known to count more than limit in the
// window that ends at end.
func (c *overCache) over(key []byte, end int64, limit uint64) bool {
	h := c.hash(key)
	s := &c.shards[(h>>32)&c.mask]
	s.mu.Lock()
	i, ok := s.findLocked(h, key)
	over := ok && s.index[i].end == end && s.index[i].count > limit
	s.mu.Unlock()
	return over
}

// add records that key counted count in the window that ends at end.
func (c *overCache) add(key []byte, end int64, count uint64) {
	h := c.hash(key)
	s := &c.shards[(h>>32)&c.mask]
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(h, key)
	if ok {
		sl := &s.index[i]
		if sl.end != end || count > sl.count {
			sl.end, sl.count = end, count
		}
		return
	}
	if len(key) > cap(s.arena)/4 {
		return // a key that would crowd out the others is not kept
	}
	if 2*(s.used+1) > len(s.index) || len(s.arena)+len(key) > cap(s.arena) {
		s.resetLocked()
		i, _ = s.findLocked(h, key)
	}
	s.index[i] = overSlot{hash: h, end: end, count: count, off: uint32(len(s.arena)), len: uint32(len(key))}
	s.arena = append(s.arena, key...)
	s.used++
}

// findLocked returns key's slot, or the empty slot where it would go.
// The index is at most half full, so an empty slot is always found.
func (s *overShard) findLocked(h uint64, key []byte) (int, bool) {
	mask := len(s.index) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		sl := &s.index[i]
		switch {
		case sl.hash == 0:
			return i, false
		case sl.hash == h && bytes.Equal(s.arena[sl.off:sl.off+sl.len], key): // the hash is a hint; the key decides
			return i, true
		}
	}
}

func (s *overShard) resetLocked() {
	clear(s.index)
	s.arena = s.arena[:0]
	s.used = 0
}
