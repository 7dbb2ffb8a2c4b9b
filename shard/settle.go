package shard

import "github.com/rlstore/rlstore/window"

// An expired reservation keeps its estimate charged unless the Map was
// made with CancelExpired; then its ledger is made with
// window.LedgerParams(true), which never expires while it holds any
// reservation, and the estimates of those that expired are given back to
// the ledger's key when the ledger is settled: by Sweep, which visits
// every key about once a second, and before any RL.RESERVE, RL.COMMIT or
// RL.CANCEL of the key. Until then the estimate stays charged, so a late
// settlement never admits more than an early one would.

// settleLocked gives back to key, of hash h, the estimates of the
// reservations that expired by now in ledger (hash hl, slot j), if it is
// a ledger that gives them back, and reports whether the ledger is still
// there; if not, the caller counts the key gone (Map.keys). The ledger is written before the key: giving units back may
// move the key's counters, never the ledger's.
func (m *Map) settleLocked(s *shard, j uint32, ledger []byte, hl uint64, key []byte, h uint64, now int64) bool {
	sl := s.slots.at(j)
	b := s.peekCountersLocked(sl)
	p := s.params.get(sl.param())
	if !(window.Reservations{}).Due(p, b, now) {
		return true
	}
	sum, b := p.Ledger().Settle(b, now)
	if len(b) > 0 {
		s.storeCountersLocked(sl, b)
		s.markDirtyLocked(j)
	}
	if key != nil {
		m.adjustLocked(s, key, h, now, -sum)
	}
	if len(b) > 0 {
		m.accountLocked(s)
		return true
	}
	s.markGoneLocked(ledger)
	s.removeLocked(j, hl)
	m.accountLocked(s)
	return false
}

// sweepSettleLocked settles the ledger in slot i, if it is one that gives
// expired estimates back, finding its key with Config.Route, and reports
// whether the slot still holds a key.
func (m *Map) sweepSettleLocked(s *shard, i uint32, now int64) bool {
	sl := s.slots.at(i)
	if !s.params.get(sl.param()).Cancels() {
		return true
	}
	ledger := s.keys.get(sl.key, sl.keyLen())
	var key []byte
	var h uint64
	if m.cfg.Route != nil {
		if key = m.cfg.Route(ledger); len(key) == len(ledger) {
			key = nil // not a ledger's key after all
		} else {
			h = m.hash(key)
		}
	}
	return m.settleLocked(s, i, ledger, s.hash(ledger), key, h, now)
}
