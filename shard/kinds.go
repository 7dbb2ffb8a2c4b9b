package shard

import (
	"github.com/rlstore/rlstore/window"
)

// kindSlots bounds the window.Kind values counted per kind; a test checks
// that every named kind fits.
const kindSlots = 8

// KindStat is the live keys of one algorithm and the bytes they hold, each
// key counted as MemoryUsage counts it.
type KindStat struct {
	Keys  int64
	Bytes int64
}

// kinds are one shard's per-kind counts, guarded by the shard's mu. They
// change only where a key is bound to parameters, unbound, or its counter
// block moves, so a decision that changes none of these costs nothing.
type kinds [kindSlots]KindStat

// KindStats returns, indexed by window.Kind, the live keys of each algorithm
// and the bytes they hold, summed over the shards on demand. Expired keys not
// yet swept count, as they do in Len. Policy rules' keys count under their
// rules' algorithms. Bytes add up to what MemoryUsage reports of every key;
// Stats().Bytes is larger, counting whole pages and the index's free room.
func (m *Map) KindStats() [kindSlots]KindStat {
	var out [kindSlots]KindStat
	for _, s := range m.shards {
		s.mu.Lock()
		for k, st := range s.kinds {
			out[k].Keys += st.Keys
			out[k].Bytes += st.Bytes
		}
		s.mu.Unlock()
	}
	return out
}

// baseBytesLocked returns the bytes sl's key holds apart from its counter
// block: its slot, its index entry and its key's bytes in the arena.
func (s *shard) baseBytesLocked(sl *slot) int64 {
	return int64(slotBytes + 4 + storedLen(len(s.keys.get(sl.key, sl.keyLen()))))
}

// bindLocked gives sl, which has no parameters, parameters p, and counts its
// key under p's kind.
func (s *shard) bindLocked(sl *slot, p window.Params) {
	sl.setParam(s.params.acquire(p))
	st := &s.kinds[p.Kind]
	st.Keys++
	st.Bytes += s.baseBytesLocked(sl)
}

// unbindLocked drops sl's parameters and counter block, if it has them, and
// its key from its kind's count.
func (s *shard) unbindLocked(sl *slot) {
	if sl.param() == 0 {
		return
	}
	k := s.params.get(sl.param()).Kind
	if hasCounters(k) {
		s.freeCountersLocked(sl)
	}
	st := &s.kinds[k]
	st.Keys--
	st.Bytes -= s.baseBytesLocked(sl)
	s.params.release(sl.param())
	sl.setParam(0)
}

// extBytesLocked adds n bytes of counter block to sl's kind.
func (s *shard) extBytesLocked(sl *slot, n int) {
	s.kinds[s.params.get(sl.param()).Kind].Bytes += int64(n)
}
