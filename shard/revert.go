package shard

import "slices"

// Lookup returns a copy of key's entry, and whether key holds state. route
// names the key whose hash picks its shard, as for Entry.Route (nil: key itself).
func (m *Map) Lookup(key, route []byte) (Entry, bool) {
	h, s := m.locate(key, route)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(key, h)
}

func (s *shard) lookupLocked(key []byte, h uint64) (Entry, bool) {
	i, ok := s.findLocked(key, h)
	if !ok {
		return Entry{}, false
	}
	var x exporter
	es := x.slotLocked(s, i, nil)
	if len(es) != 1 {
		return Entry{}, false
	}
	return es[0], true
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
