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
	p := s.params.get(sl.param)
	inf := Info{Params: p}
	switch p.Kind {
	case window.KindSlide:
		b := s.peekCountersLocked(sl)
		inf.Count, inf.Expiry = p.Slide().Count(b, now), p.Slide().Expiry(b)
	case window.KindToken:
		inf.Count, inf.Expiry = p.Token().Tokens(sl.state, now), p.Token().Expiry(sl.state)
	case window.KindFixed:
		inf.Count, inf.Expiry = p.Fixed().Count(sl.state, now), p.Fixed().Expiry(sl.state)
	case window.KindLog:
		b := s.peekCountersLocked(sl)
		inf.Count, inf.Expiry = p.Log().Count(b, now), p.Log().Expiry(b)
	case window.KindLeaky:
		inf.Count, inf.Expiry = p.Leaky().Queued(sl.state, now), p.Leaky().Expiry(sl.state)
	}
	return inf
}

// expiryLocked returns when sl's state stops restricting anything (unix nanoseconds).
func (s *shard) expiryLocked(sl *slot) int64 {
	p := s.params.get(sl.param)
	switch p.Kind {
	case window.KindSlide:
		return p.Slide().Expiry(s.peekCountersLocked(sl))
	case window.KindToken:
		return p.Token().Expiry(sl.state)
	case window.KindFixed:
		return p.Fixed().Expiry(sl.state)
	case window.KindLog:
		return p.Log().Expiry(s.peekCountersLocked(sl))
	case window.KindLeaky:
		return p.Leaky().Expiry(sl.state)
	}
	return 0
}

// Delete removes key and reports whether it existed.
func (m *Map) Delete(key []byte) bool {
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	defer s.mu.Unlock()
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
