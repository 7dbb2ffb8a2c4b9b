package shard

import (
	"time"

	"github.com/rlstore/rlstore/window"
)

// ReserveAll is Reserve against every rule of a policy, all or nothing, as
// DecideAll decides: q's keys, its penalty's and ledger all live in route's
// shard and change under its lock. A new reservation (r.Op ReserveNew)
// charges r.Units to every rule, only if every rule admits it, and records
// it in ledger; the decisions, one per rule, are appended to dst, with the
// penalty left as DecideAll returns it. A commit or cancel takes the
// reservation from ledger and charges or gives back the difference to
// every rule (window.Params.Adjust), each within its own limit. Every rule
// must be a Slide, Fixed or Token. An expired reservation's estimate is
// given back to every rule, as a cancel gives it, if the Map was made with
// CancelExpired (see settleLocked): here to q's rules, by Sweep to every
// rule key of the ledger's that Config.Charged names and the store holds.
func (m *Map) ReserveAll(route, ledger []byte, q *Multi, r ReserveRequest, now int64, dst []window.Decision) ([]window.Decision, time.Duration, ReserveResult, error) {
	if err := r.checkAll(q); err != nil {
		return dst, 0, ReserveResult{}, err
	}
	hs, err := m.multiHashes(q, max(r.Units, 1))
	if err != nil {
		return dst, 0, ReserveResult{}, err
	}
	hl := m.hash(ledger)
	s := m.shardFor(m.hash(route))
	now = max(now, 0)
	s.mu.Lock()
	if r.Op != ReserveNew {
		ok := m.settleAllLocked(s, q, hs[:len(q.Keys)], ledger, hl, &r, now)
		s.mu.Unlock()
		s.stats.count(true, false, false, nil)
		return dst, 0, ReserveResult{Done: ok}, nil
	}
	start := len(dst)
	dst, left, res, err := m.reserveAllNewLocked(s, q, hs[:len(q.Keys)+1], ledger, hl, &r, now, dst)
	s.mu.Unlock()
	s.stats.count(left <= 0 && allAdmit(dst[start:]), false, false, err)
	return dst, left, res, err
}

// settleAllLocked takes reservation r.ID from ledger and charges or gives
// back the difference to every rule of q, reporting whether it was outstanding.
func (m *Map) settleAllLocked(s *shard, q *Multi, hs []uint64, ledger []byte, hl uint64, r *ReserveRequest, now int64) bool {
	est, ok, _ := m.ledgerTakeLocked(s, ledger, hl, q.Keys, hs, r.ID, now)
	delta := -est // a cancel gives the estimate back
	if r.Op == ReserveCommit {
		delta = r.Units - est
	}
	if !ok || delta == 0 {
		return ok
	}
	for i, k := range q.Keys {
		m.adjustLocked(s, k, hs[i], now, delta)
	}
	return true
}

func (r *ReserveRequest) checkAll(q *Multi) error {
	for _, p := range q.Params {
		if !p.Kind.Adjustable() {
			return ErrWrongType
		}
	}
	switch {
	case r.Op == Refund:
		return ErrWrongType
	case r.Op != ReserveNew:
		return (&ReserveRequest{Op: r.Op, Units: r.Units}).check()
	case r.Units < 1 || r.Units > window.MaxEstimate:
		return window.ErrCost
	case r.TTL < time.Millisecond || r.TTL > window.MaxLeaseTTL:
		return window.ErrWindow
	}
	return nil
}

func (m *Map) reserveAllNewLocked(s *shard, q *Multi, hs []uint64, ledger []byte, hl uint64, r *ReserveRequest, now int64, dst []window.Decision) ([]window.Decision, time.Duration, ReserveResult, error) {
	j, found, _ := m.findLedgerLocked(s, ledger, hl, q.Keys, hs[:len(q.Keys)], now)
	live := found && !s.expiredLocked(s.slots.at(j), now)
	if live {
		b := s.peekCountersLocked(s.slots.at(j))
		rs := s.params.get(s.slots.at(j).param()).Ledger()
		if _, dup := rs.Find(b, now, r.ID); dup { // a retry: charge nothing twice
			start := len(dst)
			dst, left, err := m.decideAllLocked(s, q, hs, now, 1, true, dst)
			for i := range dst[start:] {
				dst[start+i].Allowed, dst[start+i].Wait = true, 0
			}
			return dst, left, ReserveResult{Done: true}, err
		}
		if full, wait := rs.Full(b, now); full {
			start := len(dst)
			dst, left, err := m.decideAllLocked(s, q, hs, now, r.Units, true, dst)
			dst[start].Allowed, dst[start].Wait = false, max(dst[start].Wait, wait)
			return dst, left, ReserveResult{}, err
		}
	}
	start := len(dst)
	dst, left, err := m.decideAllLocked(s, q, hs, now, r.Units, false, dst)
	if err != nil || left > 0 || !allAdmit(dst[start:]) {
		return dst, left, ReserveResult{}, err
	}
	if !live {
		if !found {
			var ok bool
			if j, ok = m.insertLocked(s, ledger, hl); !ok {
				for i, k := range q.Keys { // no room to record it: take the charge back
					m.adjustLocked(s, k, hs[i], now, -r.Units)
				}
				return dst[:start], 0, ReserveResult{}, ErrFull
			}
		}
	}
	m.ledgerAddLocked(s, j, live, window.LedgerParams(m.cfg.CancelExpired), r, now)
	return dst, 0, ReserveResult{}, nil
}
