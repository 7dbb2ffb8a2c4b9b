package shard

import (
	"errors"

	"github.com/rlstore/rlstore/window"
)

// A replica's primary ships a Slide or Log key that changed as a delta:
// only its newest counters, those a change since its last shipment can
// have touched. The backup completes the delta from the copy it holds
// (completeLocked). A digest of every counter proves the result equals
// the primary's state; a delta that does not fit is refused, and the
// primary ships the key whole (Touch).

// ErrDelta is returned by ImportBatch for a delta (Entry.Kept) that its
// key's state cannot complete: the key holds no state, or other
// parameters, or too few older counters, or counters other than those the
// delta was cut from (the digest differs).
var ErrDelta = errors.New("shard: delta does not fit the key's state")

// CounterDigest returns a checksum of counters b, for Entry.Digest. Each
// counter is mixed on its own and the mixes summed, so that a backup and
// its primary, which digest every counter of every delta, do not wait on
// a chain of multiplies. The order of b is not in the sum, but counters
// ascend by stamp, so their set fixes it; a change to any one counter
// changes the sum.
func CounterDigest(b []uint64) uint32 {
	h := uint64(len(b))
	for _, c := range b {
		c *= 0x9e3779b97f4a7c15
		h += c ^ c>>31
	}
	h *= 0xff51afd7ed558ccd
	return uint32(h ^ h>>32)
}

// completeLocked fills the first e.Kept of e.Counters with the counters
// that key's state in s (whose lock is held) keeps before e's first
// shipped one, checks the digest, and makes e a whole entry. It returns
// the key's slot.
func (s *shard) completeLocked(e *Entry, h uint64) (uint32, error) {
	k := int(e.Kept)
	if !hasCounters(e.Params.Kind) || k >= len(e.Counters) {
		return 0, ErrEntry
	}
	i, ok := s.findLocked(e.Key, h)
	if !ok || i >= s.slots.next {
		return 0, ErrDelta
	}
	sl := s.slots.at(i)
	if sl.key == 0 || sl.param() == 0 || s.params.get(sl.param()) != e.Params {
		return 0, ErrDelta
	}
	cur := s.peekCountersLocked(sl)
	first := stampOf(e.Params.Kind, e.Counters[k])
	j := len(cur)
	for j > 0 && stampOf(e.Params.Kind, cur[j-1]) >= first {
		j--
	}
	if j < k {
		return 0, ErrDelta
	}
	copy(e.Counters, cur[j-k:j])
	if CounterDigest(e.Counters) != e.Digest {
		return 0, ErrDelta
	}
	e.Kept, e.Digest = 0, 0
	return i, nil
}

func stampOf(k window.Kind, c uint64) int64 {
	at, _ := k.SplitCounter(c)
	return at
}

// Touch marks key changed, as a write does, if it holds state: the next
// drain hands over its whole state again. A primary touches a key whose
// delta its backup could not complete. route is as for Lookup.
func (m *Map) Touch(key, route []byte) bool {
	h, s := m.locate(key, route)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(key, h)
	if !ok || i >= s.slots.next {
		return false
	}
	if sl := s.slots.at(i); sl.key == 0 || sl.param() == 0 {
		return false
	}
	s.markDirtyLocked(i)
	return true
}
