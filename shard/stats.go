package shard

import "sync/atomic"

// stats are one shard's counters, updated with atomics outside its lock.
type stats struct {
	allowed, denied, shadowDenied, errors atomic.Int64
	swept, sweeps, rebuilds               atomic.Int64
	leasesExpired, reservationsExpired    atomic.Int64 // see countEndedLocked
}

// count is the one definition of the decision counters, and every decision
// path (Decide, Throttle, DecideAll) counts through it: a request that is not
// a peek counts once, as allowed, denied, or refused (ErrWrongType,
// ErrFull). A peek changes nothing and counts nowhere; nor does bad input,
// which is not a decision. A shadow request's denial counts as denied and as
// shadow-denied: its caller admits it anyway.
func (s *stats) count(allowed, peek, shadow bool, err error) {
	switch {
	case peek:
	case err == ErrWrongType || err == ErrFull:
		s.errors.Add(1)
	case err != nil:
	case allowed:
		s.allowed.Add(1)
	default:
		s.denied.Add(1)
		if shadow {
			s.shadowDenied.Add(1)
		}
	}
}

// Stats is a summary of the whole Map, summed over its shards on demand.
type Stats struct {
	Keys     int64 // live keys
	Bytes    int64 // bytes of pages and index entries held for keys
	Allowed  int64 // requests admitted (peeks never count; see stats.count)
	Denied   int64 // requests denied, shadow requests' included
	Shadowed int64 // shadow requests that would have been denied
	Errors   int64 // requests refused with ErrWrongType or ErrFull
	Swept    int64 // keys freed by Sweep
	Sweeps   int64 // shard sweeps run
	Rebuilds int64 // shard indexes rebuilt to give memory back

	LeasesExpired       int64 // leases dropped because their TTL ran out (ended.go)
	ReservationsExpired int64 // reservations whose TTL ran out, committed or given back by the Map's mode
}

// Stats sums the shards' counters.
func (m *Map) Stats() Stats {
	st := Stats{Keys: m.keys.Load(), Bytes: m.bytes.Load()}
	for _, s := range m.shards {
		st.Allowed += s.stats.allowed.Load()
		st.Denied += s.stats.denied.Load()
		st.Shadowed += s.stats.shadowDenied.Load()
		st.Errors += s.stats.errors.Load()
		st.Swept += s.stats.swept.Load()
		st.Sweeps += s.stats.sweeps.Load()
		st.Rebuilds += s.stats.rebuilds.Load()
		st.LeasesExpired += s.stats.leasesExpired.Load()
		st.ReservationsExpired += s.stats.reservationsExpired.Load()
	}
	return st
}
