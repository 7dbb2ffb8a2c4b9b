package shard

import "github.com/rlstore/rlstore/window"

// Throttle applies CL.THROTTLE's request of quantity units to key at now (unix
// nanoseconds) under p. The key holds Token state, so RL.TOKEN and CL.THROTTLE
// may share it; any other kind gets ErrWrongType. A quantity of 0 peeks and a
// negative one refunds: neither creates a key, and a refund that leaves the
// bucket full drops the key, which then restricts nothing.
func (m *Map) Throttle(key []byte, p window.Throttle, now, quantity int64) (window.ThrottleReply, error) {
	if err := p.Validate(); err != nil {
		return window.ThrottleReply{}, err
	}
	now = max(now, 0)
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	r, err := m.throttleLocked(s, key, h, p, now, quantity)
	s.mu.Unlock()
	if quantity > 0 {
		s.stats.count(window.Decision{Allowed: !r.Limited}, err)
	}
	return r, err
}

func (m *Map) throttleLocked(s *shard, key []byte, h uint64, p window.Throttle, now, quantity int64) (window.ThrottleReply, error) {
	tp := window.Params{Kind: window.KindToken}
	tk := p.Token()
	tp.Limit, tp.Rate, tp.Period = tk.Capacity, tk.Rate, tk.Period
	i, ok := s.findLocked(key, h)
	if !ok {
		var st window.State
		r, changed := p.Decide(&st, now, quantity)
		if !changed || tk.Expiry(st) <= now {
			return r, nil
		}
		if i, ok = m.insertLocked(s, key, h); !ok {
			return window.ThrottleReply{}, ErrFull
		}
		sl := s.slots.at(i)
		sl.param, sl.state = s.params.acquire(tp), st
		s.markDirtyLocked(i)
		m.accountLocked(s)
		return r, nil
	}
	sl := s.slots.at(i)
	if s.params.get(sl.param).Kind != window.KindToken {
		return window.ThrottleReply{}, ErrWrongType
	}
	st := sl.state
	r, changed := p.Decide(&st, now, quantity)
	if !changed {
		return r, nil
	}
	if tk.Expiry(st) <= now { // a refund to a full bucket
		s.markGoneLocked(key)
		s.removeLocked(i, h)
		m.keys.Add(-1)
	} else {
		s.setParamLocked(sl, tp)
		sl.state = st
		s.markDirtyLocked(i)
	}
	m.accountLocked(s)
	return r, nil
}
