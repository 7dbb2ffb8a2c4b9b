package shard

import (
	"time"

	"github.com/rlstore/rlstore/window"
)

// MaxRules is the most rules one Multi may hold.
const MaxRules = 32

// Multi is a request decided by several rules at once, all or nothing.
type Multi struct {
	Keys    [][]byte        // each rule's state key
	Params  []window.Params // each rule's parameters, parallel to Keys
	Penalty []byte          // the penalty's state key, or nil for no penalty
	For     time.Duration   // how long a denial blocks the key outright
	Shadow  bool            // the caller admits a denied request anyway: count its denial as shadowed too
}

// DecideAll decides a request of cost units at now (unix nanoseconds) against
// every rule of q under one shard lock: the shard route picks, so that the
// keys of every rule, and the penalty's, live in one shard. Whoever reloads
// them (Import) must give them the same route. The request is admitted only if every
// rule admits it, and only then is every rule charged; a denial charges none
// and, with a penalty, blocks the key outright for q.For. While it is blocked
// (from that denial on), DecideAll returns how long it still is, and every
// rule's decision as a peek.
// A rule whose key holds another algorithm's state starts fresh. With peek
// nothing changes and no key is created. The decisions, one per rule, are
// appended to dst.
func (m *Map) DecideAll(route []byte, q *Multi, now, cost int64, peek bool, dst []window.Decision) ([]window.Decision, time.Duration, error) {
	if len(q.Keys) != len(q.Params) || len(q.Keys) == 0 || len(q.Keys) > MaxRules {
		return dst, 0, window.ErrLimit
	}
	hs, err := m.multiHashes(q, cost)
	if err != nil {
		return dst, 0, err
	}
	s := m.shardFor(m.hash(route))
	now = max(now, 0)
	start := len(dst)
	s.mu.Lock()
	dst, left, err := m.decideAllLocked(s, q, hs[:len(q.Keys)+1], now, cost, peek, dst)
	s.mu.Unlock()
	allowed := left <= 0
	for _, d := range dst[start:] {
		allowed = allowed && d.Allowed
	}
	s.stats.count(allowed, peek, q.Shadow, err)
	return dst, left, err
}

// multiHashes checks q and returns its keys' hashes, the penalty's last.
func (m *Map) multiHashes(q *Multi, cost int64) ([MaxRules + 1]uint64, error) {
	var hs [MaxRules + 1]uint64
	for i, k := range q.Keys {
		if err := check(q.Params[i], cost); err != nil {
			return hs, err
		}
		hs[i] = m.hash(k)
	}
	n := len(q.Keys)
	if q.Penalty != nil {
		if q.For <= 0 || q.For > window.MaxWindow {
			return hs, window.ErrWindow
		}
		hs[n] = m.hash(q.Penalty)
	}
	return hs, nil
}

func (m *Map) decideAllLocked(s *shard, q *Multi, hs []uint64, now, cost int64, peek bool, dst []window.Decision) ([]window.Decision, time.Duration, error) {
	start := len(dst)
	for i, k := range q.Keys {
		dst = append(dst, s.peekRuleLocked(k, hs[i], q.Params[i], now, cost))
	}
	left := s.penaltyLeftLocked(q, hs[len(q.Keys)], now)
	if left > 0 {
		return dst, left, nil
	}
	if peek {
		if allAdmit(dst[start:]) && !m.fitsLocked(s, s.missingLocked(q, hs)) {
			return dst, 0, ErrFull // the same call would get ErrFull
		}
		return dst, 0, nil
	}
	for _, d := range dst[start:] {
		if !d.Allowed {
			if q.Penalty != nil && m.penalizeLocked(s, q, hs[len(q.Keys)], now) {
				return dst, q.For, nil
			}
			return dst, 0, nil
		}
	}
	dst = dst[:start]
	return m.chargeAllLocked(s, q, hs, now, cost, dst)
}

// allAdmit reports whether every decision of ds admits the request.
func allAdmit(ds []window.Decision) bool {
	for _, d := range ds {
		if !d.Allowed {
			return false
		}
	}
	return true
}

// missingLocked returns how many of q's rule keys do not exist yet.
func (s *shard) missingLocked(q *Multi, hs []uint64) int {
	n := 0
	for i, k := range q.Keys {
		if _, ok := s.findLocked(k, hs[i]); !ok {
			n++
		}
	}
	return n
}

// peekRuleLocked decides a rule without changing anything.
func (s *shard) peekRuleLocked(key []byte, h uint64, p window.Params, now, cost int64) window.Decision {
	i, ok := s.findLocked(key, h)
	if ok {
		if sl := s.slots.at(i); s.params.get(sl.param()).Kind == p.Kind && !s.expiredLocked(sl, now) {
			return s.decideSlotLocked(sl, p, now, cost, true)
		}
	}
	var fresh slot
	return s.decideSlotLocked(&fresh, p, now, cost, true)
}

// chargeAllLocked charges every rule of q, which all admit the request. It
// makes every missing key first, so that running out of room charges none.
func (m *Map) chargeAllLocked(s *shard, q *Multi, hs []uint64, now, cost int64, dst []window.Decision) ([]window.Decision, time.Duration, error) {
	var slots [MaxRules]uint32
	var made [MaxRules]bool
	for i, k := range q.Keys {
		j, ok := s.findLocked(k, hs[i])
		if !ok {
			if j, ok = m.insertLocked(s, k, hs[i]); !ok {
				m.unmakeLocked(s, hs, slots[:i], made[:i])
				return dst, 0, ErrFull
			}
			made[i] = true
		}
		slots[i] = j
	}
	for i, p := range q.Params {
		sl := s.slots.at(slots[i])
		s.setRuleParamLocked(sl, p, now)
		dst = append(dst, s.decideSlotLocked(sl, p, now, cost, false))
		s.markDirtyLocked(slots[i])
	}
	m.accountLocked(s)
	return dst, 0, nil
}

// unmakeLocked removes the keys chargeAllLocked made before it ran out of
// room. They were never marked dirty, so they need no tombstone.
func (m *Map) unmakeLocked(s *shard, hs []uint64, slots []uint32, made []bool) {
	for i, j := range slots {
		if made[i] {
			s.removeLocked(j, hs[i])
			m.keys.Add(-1)
		}
	}
	m.accountLocked(s)
}

// setRuleParamLocked gives sl parameters p. A new slot, one holding another
// algorithm's state, or one whose state has expired starts fresh.
func (s *shard) setRuleParamLocked(sl *slot, p window.Params, now int64) {
	if sl.param() == 0 || s.params.get(sl.param()).Kind != p.Kind || s.expiredLocked(sl, now) {
		s.resetSlotLocked(sl, p, now)
		return
	}
	s.setParamLocked(sl, p)
}

// The penalty's state is a token bucket of capacity 1 that refills in q.For:
// its TAT is the end of the penalty, so it expires, sweeps and persists like
// any Token key.
func penaltyParams(d time.Duration) window.Params {
	return window.Params{Kind: window.KindToken, Limit: 1, Rate: 1, Period: d}
}

// penaltyLeftLocked returns how long q's key is still blocked at now.
func (s *shard) penaltyLeftLocked(q *Multi, h uint64, now int64) time.Duration {
	if q.Penalty == nil {
		return 0
	}
	i, ok := s.findLocked(q.Penalty, h)
	if !ok {
		return 0
	}
	sl := s.slots.at(i)
	if s.params.get(sl.param()).Kind != window.KindToken {
		return 0
	}
	return time.Duration(max(0, int64(sl.state[0])-max(now, int64(sl.state[1]))))
}

// penalizeLocked blocks q's key until now + q.For and reports whether it
// could. If the store is full the denial still stands, only without its penalty.
func (m *Map) penalizeLocked(s *shard, q *Multi, h uint64, now int64) bool {
	i, ok := s.findLocked(q.Penalty, h)
	if !ok {
		if i, ok = m.insertLocked(s, q.Penalty, h); !ok {
			return false
		}
	}
	sl := s.slots.at(i)
	s.setRuleParamLocked(sl, penaltyParams(q.For), now)
	sl.state = window.State{uint64(now + int64(q.For)), uint64(now)}
	s.markDirtyLocked(i)
	m.accountLocked(s)
	return true
}
