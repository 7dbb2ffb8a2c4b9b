package shard

import (
	"time"

	"github.com/rlstore/rlstore/window"
)

// LeaseOp says what a LeaseRequest does.
type LeaseOp uint8

// The lease operations: RL.ACQUIRE, RL.RENEW, RL.RELEASE.
const (
	LeaseAcquire LeaseOp = iota
	LeaseRenew
	LeaseRelease
)

// LeaseRequest is one operation on a key's leases.
type LeaseRequest struct {
	Op    LeaseOp
	Limit int64         // Acquire: the key's limit, which it then keeps
	ID    uint64        // window.LeaseID of the lease's id
	TTL   time.Duration // Acquire, Renew: how long the lease lives from now
	Cost  int64         // Acquire: its units
}

// LeaseResult is the outcome of a LeaseRequest: for Acquire its decision;
// for Renew and Release whether the lease was live (Decision.Allowed),
// with the units still in flight.
type LeaseResult = window.LeaseDecision

// Lease applies r to key's leases at now (unix nanoseconds). An acquire
// creates the key when it is admitted; renew and release never create one,
// and a key whose last lease ends is gone at once (its slot waits for the
// sweep, which frees it and counts it out of Len). A key that holds
// another algorithm's state gets ErrWrongType.
func (m *Map) Lease(key []byte, r LeaseRequest, now int64) (LeaseResult, error) {
	if r.Op == LeaseAcquire {
		if err := (window.Lease{Limit: r.Limit}).Validate(); err != nil {
			return LeaseResult{}, err
		}
		if r.Cost < 1 || r.Cost > window.MaxLeaseCost {
			return LeaseResult{}, window.ErrCost
		}
	}
	if r.Op != LeaseRelease && (r.TTL < time.Millisecond || r.TTL > window.MaxLeaseTTL) {
		return LeaseResult{}, window.ErrWindow
	}
	now = max(now, 0)
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	res, err := m.leaseLocked(s, key, h, &r, now)
	s.mu.Unlock()
	s.stats.count(res.Allowed, false, false, err)
	return res, err
}

func (m *Map) leaseLocked(s *shard, key []byte, h uint64, r *LeaseRequest, now int64) (LeaseResult, error) {
	i, found := s.findLocked(key, h)
	if !found {
		return m.leaseCreateLocked(s, key, h, r, now, i, false)
	}
	// The slot, its parameters and its words are read once: the checks
	// below and the operation all need them (as in decideLocked).
	sl := s.slots.at(i)
	p := s.params.get(sl.param())
	if p.Kind != window.KindLease {
		if p.Expiry(sl.state, s.countersOfLocked(p.Kind, sl)) > now {
			return LeaseResult{}, ErrWrongType
		}
		return m.leaseCreateLocked(s, key, h, r, now, i, true)
	}
	b := s.peekCountersLocked(sl)
	if p.Lease().Expiry(b) <= now {
		return m.leaseCreateLocked(s, key, h, r, now, i, true)
	}
	if r.Op == LeaseAcquire {
		p.Limit = r.Limit
		if s.setParamLocked(sl, p) { // an acquire applies its limit, as a decision its parameters
			s.markDirtyLocked(i)
		}
		if cap(b)-len(b) < 2 { // room for one more lease (leaseRoomLocked)
			b = s.moveCountersLocked(sl, b, len(b)+2)
		}
	}
	before := len(b)
	s.stats.addLeasesExpired(p.Lease().Ended(b, now))
	res, b := applyLease(p.Lease(), b, r, now)
	s.storeCountersLocked(sl, b)
	if len(b) == 0 {
		// The key is gone: with no lease it expires at 0, so it is absent
		// to every command and the tombstone logs it. Its slot stays, bound
		// to its parameters, until the sweep frees it (and counts it out of
		// Len), so that the key's next acquire, in a workload of pairs
		// often a moment later, starts in it with no insert.
		s.markGoneLocked(key)
		m.accountLocked(s)
		return res, nil
	}
	if res.Allowed || len(b) != before {
		s.markDirtyLocked(i)
	}
	m.accountLocked(s)
	return res, nil
}

// leaseCreateLocked applies r to a key with no live leases: only an
// admitted acquire keeps anything. found says the key is still in slot i,
// expired but not yet swept.
func (m *Map) leaseCreateLocked(s *shard, key []byte, h uint64, r *LeaseRequest, now int64, i uint32, found bool) (LeaseResult, error) {
	var buf [2]uint64
	p := window.Params{Kind: window.KindLease, Limit: r.Limit}
	res, b := applyLease(p.Lease(), buf[:0], r, now)
	if r.Op != LeaseAcquire || !res.Allowed {
		return res, nil
	}
	if !found {
		var ok bool
		if i, ok = m.insertLocked(s, key, h); !ok {
			return LeaseResult{}, ErrFull
		}
	}
	sl := s.slots.at(i)
	s.resetSlotLocked(sl, p, now)
	sl.state = window.State{b[0], b[1]}
	s.markDirtyLocked(i)
	m.accountLocked(s)
	return res, nil
}

// applyLease runs r on leases b.
func applyLease(l window.Lease, b []uint64, r *LeaseRequest, now int64) (LeaseResult, []uint64) {
	switch r.Op {
	case LeaseAcquire:
		return l.Acquire(b, now, r.ID, r.TTL, r.Cost)
	case LeaseRenew:
		ok, b := l.Renew(b, now, r.ID, r.TTL)
		return LeaseResult{Allowed: ok, Limit: l.Limit, InFlight: l.InFlight(b, now)}, b
	}
	ok, b := l.Release(b, now, r.ID)
	return LeaseResult{Allowed: ok, Limit: l.Limit, InFlight: l.InFlight(b, now)}, b
}

// leaseRoomLocked returns a Lease slot's leases with room for one more
// (two words), growing their storage if needed. An empty slot holds one in
// its state's two words: a ledger's first reservation, in a workload of
// pairs, then costs no block moved out and back.
func (s *shard) leaseRoomLocked(sl *slot) []uint64 {
	b := s.peekCountersLocked(sl)
	if cap(b)-len(b) >= 2 {
		return b
	}
	if len(b) == 0 && sl.state[0] != extMark {
		return sl.state[:0:inlineCounters]
	}
	return s.moveCountersLocked(sl, b, len(b)+2)
}
