package shard

import "slices"

// Lookup returns a copy of key's entry, and whether key holds state; the
// entry's Key is key itself. route
// names the key whose hash picks its shard, as for Entry.Route (nil: key itself).
func (m *Map) Lookup(key, route []byte) (Entry, bool) {
	h, s := m.locate(key, route)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(key, h)
}

// lookupLocked returns key's entry. Its Key is key itself, not a copy, and
// only a Slide's or Log's counters are copied: the server looks up every
// key a write changes under appendfsync always.
func (s *shard) lookupLocked(key []byte, h uint64) (Entry, bool) {
	i, ok := s.findLocked(key, h)
	if !ok || i >= s.slots.next {
		return Entry{}, false
	}
	sl := s.slots.at(i)
	if sl.key == 0 || sl.param() == 0 {
		return Entry{}, false
	}
	e := Entry{Key: key, Params: s.params.get(sl.param())}
	if hasCounters(e.Params.Kind) {
		e.Counters = slices.Clone(s.peekCountersLocked(sl))
	} else {
		e.State = sl.state
	}
	return e, true
}

// Revert puts key back to before (nil: no state) if its state is still
// after (nil: no state), and reports whether it did. A server uses it to
// take back a change whose commit failed, so that a request its client was
// told failed keeps no charge; the check on after leaves alone a key that
// another request has changed since. route is as for Lookup.
func (m *Map) Revert(key, route []byte, before, after *Entry) bool {
	h, s := m.locate(key, route)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.lookupLocked(key, h)
	if !sameEntry(cur, ok, after) {
		return false
	}
	i, found := s.findLocked(key, h)
	switch {
	case before == nil && found:
		s.markGoneLocked(key)
		s.removeLocked(i, h)
		m.keys.Add(-1)
	case before != nil:
		if !found {
			if i, found = m.insertLocked(s, key, h); !found {
				return false
			}
		}
		s.setEntryLocked(s.slots.at(i), before)
		s.markDirtyLocked(i)
	}
	m.accountLocked(s)
	return true
}

// SameEntry reports whether a and b (nil: no state) hold the same state.
func SameEntry(a, b *Entry) bool {
	if a == nil {
		return b == nil
	}
	return sameEntry(*a, true, b)
}

func sameEntry(cur Entry, ok bool, want *Entry) bool {
	if want == nil || !ok {
		return want == nil && !ok
	}
	return cur.Params == want.Params && cur.State == want.State && slices.Equal(cur.Counters, want.Counters)
}

// ImportMissing stores e as Import does, but only if its key holds no
// live state, and reports whether it did: a cluster node fills in the keys
// a handoff brings that it lacks, and keeps the ones it has been deciding.
// A tombstone, or an entry expired at now, changes nothing.
func (m *Map) ImportMissing(e Entry, now int64) (bool, error) {
	return m.importOver(e, now, func(Entry, *Entry) bool { return false })
}
