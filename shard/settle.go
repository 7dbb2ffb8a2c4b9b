package shard

import "github.com/rlstore/rlstore/window"

// An expired reservation keeps its estimate charged unless the Map was
// made with CancelExpired; then its ledger is made with
// window.LedgerParams(true), which never expires while it holds any
// reservation, and the estimates of those that expired are given back to
// the keys they were charged to when the ledger is settled: by Sweep,
// which visits every key about once a second and finds those keys with
// Config.Charged, and before any RL.RESERVE, RL.COMMIT or RL.CANCEL of
// the ledger, which know them. Until then the estimate stays charged, so
// a late settlement never admits more than an early one would.

// settleLocked removes from the ledger in slot j (key ledger, hash hl)
// the reservations that expired by now, if it is a ledger that gives them
// back, and gives their estimates back to keys, of hashes hs. It reports
// whether the ledger is still there; if not, the caller counts it gone
// (Map.keys). The ledger is written before the keys: giving units back
// may move the keys' counters, never the ledger's; and it is removed
// last, since ledger may be its own bytes in the arena.
func (m *Map) settleLocked(s *shard, j uint32, ledger []byte, hl uint64, keys [][]byte, hs []uint64, now int64) bool {
	sl := s.slots.at(j)
	b := s.peekCountersLocked(sl)
	p := s.params.get(sl.param())
	if !(window.Reservations{}).Due(p, b, now) {
		return true
	}
	s.stats.addReservationsExpired(p.Ledger().Ended(b, now))
	sum, b := p.Ledger().Settle(b, now)
	if len(b) > 0 {
		s.storeCountersLocked(sl, b)
		s.markDirtyLocked(j)
	}
	for i, k := range keys {
		m.adjustLocked(s, k, hs[i], now, -sum)
	}
	return m.settledLocked(s, j, ledger, hl, len(b) > 0)
}

// settledLocked removes the ledger in slot j if it holds nothing more,
// and reports whether it is still there.
func (m *Map) settledLocked(s *shard, j uint32, ledger []byte, hl uint64, held bool) bool {
	if !held {
		s.markGoneLocked(ledger)
		s.removeLocked(j, hl)
	}
	m.accountLocked(s)
	return held
}

// sweepSettleLocked settles the ledger in slot i, if it is one that gives
// expired estimates back, giving them back to every key Config.Charged
// names for it, and reports whether the slot still holds a key.
func (m *Map) sweepSettleLocked(s *shard, i uint32, now int64) bool {
	sl := s.slots.at(i)
	p := s.params.get(sl.param())
	if !p.Cancels() || !(window.Reservations{}).Due(p, s.peekCountersLocked(sl), now) {
		return true
	}
	ledger := s.keys.get(sl.key, sl.keyLen())
	var keys [MaxRules][]byte
	var hs [MaxRules]uint64
	n, buf := 0, s.settleBuf[:0]
	for m.cfg.Charged != nil && n < len(keys) {
		start := len(buf)
		var ok bool
		if buf, ok = m.cfg.Charged(buf, ledger, n); !ok {
			break
		}
		keys[n] = buf[start:len(buf):len(buf)]
		hs[n] = m.hash(keys[n])
		n++
	}
	s.settleBuf = buf[:0]
	return m.settleLocked(s, i, ledger, s.hash(ledger), keys[:n], hs[:n], now)
}
