package shard

import "github.com/rlstore/rlstore/window"

// A lease or reservation whose TTL runs out is dropped lazily, with no
// timer: at the next change of its key (the pruning of window.Lease and
// window.Reservations), when a key whose last one ended starts afresh
// (resetSlotLocked), when the sweep frees such a key, or, for a ledger
// that gives expired estimates back, when it is settled. Each is counted
// once, where it is dropped, in Stats.LeasesExpired or
// Stats.ReservationsExpired; the counts cost nothing until one ends.

// countEndedLocked counts the leases or reservations in sl that ended by
// now, which the caller is about to drop; a slot of any other kind, or
// with none ended, counts nothing.
func (s *shard) countEndedLocked(sl *slot, now int64) {
	if sl.param() != 0 {
		s.countEndedOfLocked(s.params.get(sl.param()), sl, now)
	}
}

// countEndedOfLocked is countEndedLocked of a slot whose parameters, p,
// the caller has at hand.
func (s *shard) countEndedOfLocked(p window.Params, sl *slot, now int64) {
	switch p.Kind {
	case window.KindLease:
		s.stats.addLeasesExpired(p.Lease().Ended(s.peekCountersLocked(sl), now))
	case window.KindReserve:
		s.stats.addReservationsExpired(p.Ledger().Ended(s.peekCountersLocked(sl), now))
	}
}

func (s *stats) addLeasesExpired(n int) {
	if n > 0 {
		s.leasesExpired.Add(int64(n))
	}
}

func (s *stats) addReservationsExpired(n int) {
	if n > 0 {
		s.reservationsExpired.Add(int64(n))
	}
}
