package shard

import "github.com/rlstore/rlstore/window"

// Info describes one key's state.
type Info struct {
	Params window.Params
	Count  int64 // Slide, Fixed, Log: units in the window; Token: whole tokens left; Leaky: units queued
	Expiry int64 // unix nanoseconds at which the state stops restricting anything
}

// Get returns key's state at now, or false if the key does not exist.
func (m *Map) Get(key []byte, now int64) (Info, bool) {
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(key, h)
	if !ok {
		return Info{}, false
	}
	return s.infoLocked(s.slots.at(i), max(now, 0)), true
}

func (s *shard) infoLocked(sl *slot, now int64) Info {
	p, b := s.params.get(sl.param()), s.slotCountersLocked(sl)
	return Info{Params: p, Count: p.Count(sl.state, b, now), Expiry: p.Expiry(sl.state, b)}
}

// expiryLocked returns when sl's state stops restricting anything (unix nanoseconds).
func (s *shard) expiryLocked(sl *slot) int64 {
	p := s.params.get(sl.param()) // read once: the counters' kind is in it too
	return p.Expiry(sl.state, s.countersOfLocked(p.Kind, sl))
}

// slotCountersLocked returns sl's counters if its kind keeps counters, else nil.
func (s *shard) slotCountersLocked(sl *slot) []uint64 {
	return s.countersOfLocked(s.params.get(sl.param()).Kind, sl)
}

// countersOfLocked returns sl's counters if its kind, k, keeps counters, else nil.
func (s *shard) countersOfLocked(k window.Kind, sl *slot) []uint64 {
	if !hasCounters(k) {
		return nil
	}
	return s.peekCountersLocked(sl)
}

// Delete removes key and reports whether it existed.
func (m *Map) Delete(key []byte) bool { return m.delete(key, nil) }

// delete removes key, whose shard route picks (nil: key itself).
func (m *Map) delete(key, route []byte) bool {
	h, s := m.locate(key, route)
	s.mu.Lock()
	defer s.mu.Unlock()
	return m.deleteLocked(s, key, h)
}

// deleteLocked removes key, of hash h, from s, whose lock is held.
func (m *Map) deleteLocked(s *shard, key []byte, h uint64) bool {
	i, ok := s.findLocked(key, h)
	if ok {
		s.markGoneLocked(key)
		s.removeLocked(i, h)
		m.keys.Add(-1)
		m.accountLocked(s)
	}
	return ok
}

// Len returns the number of keys.
func (m *Map) Len() int64 { return m.keys.Load() }

// Flush removes every key.
func (m *Map) Flush() {
	for _, s := range m.shards {
		s.mu.Lock()
		m.keys.Add(int64(-s.lenLocked()))
		s.resetLocked()
		m.accountLocked(s)
		s.mu.Unlock()
	}
}
