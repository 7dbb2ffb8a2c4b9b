package shard

// ImportJoin stores e joined with its key's live state (window.Params.Join:
// a state that restricts at least as much as either), or as it is if the
// key holds none, and reports whether the key's state changed. A cluster
// node takes the keys another node kept for it this way, when each of the
// two may have served the key last (a heal after a partition). A key whose
// state has other parameters keeps its own (its next request decides
// under the parameters it names). A tombstone, or an entry expired at now,
// changes nothing.
func (m *Map) ImportJoin(e Entry, now int64) (bool, error) {
	return m.importOver(e, now, func(cur Entry, e *Entry) bool {
		if cur.Params != e.Params {
			return false
		}
		e.State, e.Counters = e.Params.Join(cur.State, cur.Counters, e.State, e.Counters, now)
		return !sameEntry(cur, true, e)
	})
}

// importOver stores e as Import does where its key holds no live state,
// and where it does, only if over, given that state, says so (over may
// change e first); it reports whether it stored e. A tombstone, or an
// entry expired at now, changes nothing. ImportMissing and ImportJoin.
func (m *Map) importOver(e Entry, now int64, over func(cur Entry, e *Entry) bool) (bool, error) {
	if e.Deleted() {
		return false, nil
	}
	if err := e.check(); err != nil {
		return false, err
	}
	if e.Expiry() <= now {
		return false, nil
	}
	h, s := m.locate(e.Key, e.Route)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.lookupLocked(e.Key, h); ok && cur.Expiry() > now && !over(cur, &e) {
		return false, nil
	}
	err := m.importLocked(s, &e, h, now, 0, false)
	return err == nil, err
}
