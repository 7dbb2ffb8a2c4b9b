package shard

import (
	"time"

	"github.com/rlstore/rlstore/window"
)

// ReserveOp says what a ReserveRequest does.
type ReserveOp uint8

// The reservation operations: RL.RESERVE, RL.COMMIT, RL.CANCEL, RL.REFUND.
const (
	ReserveNew ReserveOp = iota
	ReserveCommit
	ReserveCancel
	Refund
)

// ReserveRequest is one operation on a key's units and its ledger of
// outstanding reservations.
type ReserveRequest struct {
	Op     ReserveOp
	Params window.Params // ReserveNew: the key's rule (Slide, Fixed or Token); Refund: that too, or none for the key's own
	ID     uint64        // window.LeaseID of the reservation's id
	TTL    time.Duration // ReserveNew: how long the estimate waits for its actual cost
	Units  int64         // ReserveNew: the estimate; ReserveCommit: the actual cost; Refund: the units given back
}

// ReserveResult is the outcome of a ReserveRequest. For ReserveNew,
// Decision is the key's decision of the estimate (Allowed: reserved), and
// Done that the id was outstanding already, so nothing was charged again.
// For the others Done says whether the reservation was outstanding
// (Refund: whether the key held units to give back).
type ReserveResult struct {
	Decision window.Decision
	Done     bool
}

// Reserve applies r to key and its ledger, the internal key ledger (see
// policy.AppendLedgerKey), which lives in key's shard: both change under
// one lock. A new reservation charges its estimate to key at once, as a
// decision of that cost does, and is recorded in the ledger unless denied;
// a commit charges or gives back the difference between the actual cost
// and the estimate (window.Params.Adjust); a cancel gives the estimate
// back. A key that is not a Slide, Fixed or Token gets ErrWrongType, but
// for a refund, which a Log takes too. r is only read: it is given by
// pointer, as copying its nine words into each call cost about 30
// instructions a command.
func (m *Map) Reserve(key, ledger []byte, r *ReserveRequest, now int64) (ReserveResult, error) {
	if err := r.check(); err != nil {
		return ReserveResult{}, err
	}
	now = max(now, 0)
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	res, err := m.reserveLocked(s, key, h, ledger, m.ledgerHashOf(key, h, ledger), r, now)
	s.mu.Unlock()
	s.stats.count(res.Decision.Allowed || r.Op != ReserveNew, false, false, err)
	return res, err
}

func (r *ReserveRequest) check() error {
	if r.Op == ReserveNew {
		if !r.Params.Kind.Adjustable() {
			return ErrWrongType
		}
		if err := check(r.Params, r.Units); err != nil {
			return err
		}
		if r.Units > window.MaxEstimate {
			return window.ErrCost
		}
		if r.TTL < time.Millisecond || r.TTL > window.MaxLeaseTTL {
			return window.ErrWindow
		}
	}
	if r.Units < 0 || (r.Op == Refund && r.Units < 1) {
		return window.ErrCost
	}
	if r.Op == Refund && r.Params.Kind != window.KindNone {
		if !r.Params.Kind.Adjustable() {
			return ErrWrongType
		}
		return r.Params.Validate()
	}
	return nil
}

// takes reports whether r applies to a key of kind k: a refund to any
// window.Kind.Refundable (a Log too), everything else to the Adjustable.
func (r *ReserveRequest) takes(k window.Kind) bool {
	if r.Op == Refund {
		return k.Refundable()
	}
	return k.Adjustable()
}

func (m *Map) reserveLocked(s *shard, key []byte, h uint64, ledger []byte, hl uint64, r *ReserveRequest, now int64) (ReserveResult, error) {
	// The key is looked up once for the whole operation: its slot stays
	// while the lock is held, whatever happens to the ledger's (settling
	// removes only the ledger; nothing but the sweep moves slots).
	i, found := s.findLocked(key, h)
	live := false
	if found {
		sl := s.slots.at(i)
		p := s.params.get(sl.param()) // read once: the kind is in it too
		live = p.Expiry(sl.state, s.countersOfLocked(p.Kind, sl)) > now
		if live && !r.takes(p.Kind) {
			return ReserveResult{}, ErrWrongType
		}
	}
	switch r.Op {
	case Refund:
		return m.refundLocked(s, key, h, r, now)
	case ReserveNew:
		return m.reserveNewLocked(s, key, h, i, found, live, ledger, hl, r, now)
	}
	est, ok, settled := m.ledgerTakeLocked(s, ledger, hl, [][]byte{key}, []uint64{h}, r.ID, now)
	if !ok {
		return ReserveResult{}, nil
	}
	delta := -est // a cancel gives the estimate back
	if r.Op == ReserveCommit {
		delta = r.Units - est
	}
	// Settling the ledger may have given units back to the key, which then
	// expires when full, but never revives one that had expired
	// (adjustLocked): only a live key that settling touched needs a second
	// look.
	switch {
	case delta == 0 || !live:
	case settled:
		m.adjustAtLocked(s, i, true, now, delta)
	default:
		m.adjustSlotLocked(s, i, now, delta)
	}
	return ReserveResult{Done: true}, nil
}

// reserveNewLocked records a new reservation of key, which findLocked
// found in slot i (found), live (keyLive) or expired, or did not.
func (m *Map) reserveNewLocked(s *shard, key []byte, h uint64, i uint32, found, keyLive bool, ledger []byte, hl uint64, r *ReserveRequest, now int64) (ReserveResult, error) {
	j, inLedger, _ := m.findLedgerLocked(s, ledger, hl, [][]byte{key}, []uint64{h}, now)
	live := false
	var b []uint64
	var rs window.Reservations
	if inLedger { // its slot, parameters and words read once
		sl := s.slots.at(j)
		p := s.params.get(sl.param())
		b, rs = s.peekCountersLocked(sl), p.Ledger()
		live = p.Expiry(sl.state, b) > now
	}
	if live {
		if _, dup := rs.Find(b, now, r.ID); dup { // a retry: charge nothing twice
			d, err := m.decideAtLocked(s, key, h, i, found, r.Params, now, 1, true)
			d.Allowed, d.Wait = true, 0
			return ReserveResult{Decision: d, Done: true}, err
		}
		if full, wait := rs.Full(b, now); full {
			d, err := m.decideAtLocked(s, key, h, i, found, r.Params, now, r.Units, true)
			d.Allowed, d.Wait = false, max(d.Wait, wait)
			return ReserveResult{Decision: d}, err
		}
	}
	var d window.Decision
	var err error
	if keyLive {
		d, err = m.decideAtLocked(s, key, h, i, found, r.Params, now, r.Units, false)
	} else {
		// Absent or expired, as decideAtLocked would find it again: settling
		// the ledger gives nothing to a key that is not live. r.check
		// checked what decideAtLocked checks before it creates the key.
		d, err = m.createLocked(s, key, h, r.Params, now, r.Units, false, i, found)
	}
	if err != nil || !d.Allowed {
		return ReserveResult{Decision: d}, err
	}
	if !live {
		if !inLedger {
			var ok bool
			if j, ok = m.insertLocked(s, ledger, hl); !ok {
				m.adjustLocked(s, key, h, now, -r.Units) // no room to record it: take the charge back
				return ReserveResult{}, ErrFull
			}
		}
	}
	m.ledgerAddLocked(s, j, live, window.LedgerParams(m.cfg.CancelExpired), r, now)
	return ReserveResult{Decision: d}, nil
}

// ledgerAddLocked records reservation r in the ledger in slot j, which
// takes parameters p first (the latest reservation's mode is the ledger's).
// A ledger that is not live starts afresh (resetSlotLocked), with nothing
// to widen or count; a live one written before estimates grew is widened.
func (m *Map) ledgerAddLocked(s *shard, j uint32, live bool, p window.Params, r *ReserveRequest, now int64) {
	sl := s.slots.at(j)
	if !live {
		s.resetSlotLocked(sl, p, now)
	} else {
		old := s.params.get(sl.param())
		if !old.Ledger().Wide {
			window.Reservations{}.Widen(s.peekCountersLocked(sl))
		}
		s.stats.addReservationsExpired(old.Ledger().Ended(s.peekCountersLocked(sl), now))
		s.setParamLocked(sl, p)
	}
	s.storeCountersLocked(sl, p.Ledger().Add(s.leaseRoomLocked(sl), now, r.ID, r.TTL, r.Units))
	s.markDirtyLocked(j)
	m.accountLocked(s)
}

// ledgerTakeLocked removes reservation id from ledger, whose reservations
// are charged to keys (of hashes hs), and returns its estimate, or false
// if it is not outstanding; settled says whether settling the ledger gave
// estimates back to keys first (findLedgerLocked).
func (m *Map) ledgerTakeLocked(s *shard, ledger []byte, hl uint64, keys [][]byte, hs []uint64, id uint64, now int64) (est int64, ok, settled bool) {
	j, found, settled := m.findLedgerLocked(s, ledger, hl, keys, hs, now)
	if !found {
		return 0, false, settled
	}
	sl := s.slots.at(j)
	p := s.params.get(sl.param()) // its parameters and words read once
	before, rs := s.peekCountersLocked(sl), p.Ledger()
	if p.Expiry(sl.state, before) <= now {
		return 0, false, settled
	}
	s.stats.addReservationsExpired(rs.Ended(before, now))
	est, ok, b := rs.Take(before, now, id)
	if !ok && len(b) == len(before) {
		return 0, false, settled
	}
	// Take prunes the expired in place, found or not: what it left is the
	// ledger now, or its last words would come back as copies.
	s.storeCountersLocked(sl, b)
	if len(b) == 0 {
		// Gone, as a lease key whose last lease is released is
		// (leaseLocked): with none it has expired, and its slot waits for
		// the sweep or the key's next reservation.
		s.markGoneLocked(ledger)
	} else {
		s.markDirtyLocked(j)
	}
	m.accountLocked(s)
	return est, ok, settled
}

// adjustLocked changes key's units by n (window.Params.Adjust) if it holds
// live state, and reports whether that changed it. An absent or expired
// key is left alone: a refund would find it full already, and a charge
// would count in a window that is over.
func (m *Map) adjustLocked(s *shard, key []byte, h uint64, now, n int64) bool {
	i, ok := s.findLocked(key, h)
	return m.adjustAtLocked(s, i, ok, now, n)
}

// adjustAtLocked is adjustLocked of a key that findLocked found in slot i
// (ok), or did not, under the same hold of the lock.
func (m *Map) adjustAtLocked(s *shard, i uint32, ok bool, now, n int64) bool {
	if !ok || s.expiredLocked(s.slots.at(i), now) {
		return false
	}
	return m.adjustSlotLocked(s, i, now, n)
}

// adjustSlotLocked is adjustAtLocked of the key in slot i, which the
// caller knows is live at now.
func (m *Map) adjustSlotLocked(s *shard, i uint32, now, n int64) bool {
	sl := s.slots.at(i)
	p := s.params.get(sl.param())
	var b []uint64
	if hasCounters(p.Kind) {
		b = s.countersLocked(sl)
	}
	b, changed := p.Adjust(&sl.state, b, now, n)
	if hasCounters(p.Kind) {
		s.storeCountersLocked(sl, b)
	}
	if changed {
		s.markDirtyLocked(i)
	}
	m.accountLocked(s)
	return changed
}

// findLedgerLocked finds ledger after settling it (settleLocked) to keys,
// of hashes hs, the keys its reservations are charged to, so that an
// expired reservation's estimate is given back before anything else reads
// the ledger. settled says whether it was due, so that keys may have had
// units given back.
func (m *Map) findLedgerLocked(s *shard, ledger []byte, hl uint64, keys [][]byte, hs []uint64, now int64) (j uint32, found, settled bool) {
	j, found = s.findLocked(ledger, hl)
	if !found {
		return 0, false, false
	}
	if sl := s.slots.at(j); !(window.Reservations{}).Due(s.params.get(sl.param()), s.peekCountersLocked(sl), now) {
		return j, true, false
	}
	if !m.settleLocked(s, j, ledger, hl, keys, hs, now) {
		m.keys.Add(-1)
		return 0, false, true
	}
	return j, true, true
}
