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
	s.stats.count(!r.Limited, quantity == 0, false, err) // a refund counts as allowed, as redis-cell replies
	return r, err
}

func (m *Map) throttleLocked(s *shard, key []byte, h uint64, p window.Throttle, now, quantity int64) (window.ThrottleReply, error) {
	tk := p.Token()
	tp := window.Params{Kind: window.KindToken, Limit: tk.Capacity, Rate: tk.Rate, Period: tk.Period}
	i, found := s.findLocked(key, h)
	live := found && !s.expiredLocked(s.slots.at(i), now) // an expired key is absent
	if live && s.params.get(s.slots.at(i).param()).Kind != window.KindToken {
		return window.ThrottleReply{}, ErrWrongType
	}
	var st window.State
	if live {
		st = s.slots.at(i).state
	}
	r, changed := p.Decide(&st, now, quantity)
	switch {
	case quantity == 0: // a peek
		return r, nil
	case !live && (!changed || tk.Expiry(st) <= now): // nothing to keep
		return r, nil
	case !live && !found:
		var ok bool
		if i, ok = m.insertLocked(s, key, h); !ok {
			return window.ThrottleReply{}, ErrFull
		}
	}
	sl := s.slots.at(i)
	switch {
	case !live:
		s.resetSlotLocked(sl, tp, now)
	case s.setParamLocked(sl, tp): // every call that is not a peek applies its parameters
		s.markDirtyLocked(i)
	}
	if changed && tk.Expiry(st) <= now { // a refund to a full bucket
		s.markGoneLocked(key)
		s.removeLocked(i, h)
		m.keys.Add(-1)
	} else if changed {
		sl.state = st
		s.markDirtyLocked(i)
	}
	m.accountLocked(s)
	return r, nil
}
