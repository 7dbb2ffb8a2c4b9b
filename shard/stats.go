package shard

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/window"
)

// stats are one shard's counters, updated with atomics outside its lock.
type stats struct {
	allowed, denied, errors atomic.Int64
	swept, sweeps, rebuilds atomic.Int64
}

func (s *stats) count(d window.Decision, err error) {
	switch {
	case err == ErrWrongType || err == ErrFull:
		s.errors.Add(1)
	case err != nil: // bad input is not a decision
	case d.Allowed:
		s.allowed.Add(1)
	default:
		s.denied.Add(1)
	}
}

// Stats is a summary of the whole Map, summed over its shards on demand.
type Stats struct {
	Keys     int64 // live keys
	Bytes    int64 // bytes of pages and index entries held for keys
	Allowed  int64 // decisions that admitted
	Denied   int64 // decisions that denied
	Errors   int64 // decisions refused with ErrWrongType or ErrFull
	Swept    int64 // keys freed by Sweep
	Sweeps   int64 // shard sweeps run
	Rebuilds int64 // shard indexes rebuilt to give memory back
}

// Stats sums the shards' counters.
func (m *Map) Stats() Stats {
	st := Stats{Keys: m.keys.Load(), Bytes: m.bytes.Load()}
	for _, s := range m.shards {
		st.Allowed += s.stats.allowed.Load()
		st.Denied += s.stats.denied.Load()
		st.Errors += s.stats.errors.Load()
		st.Swept += s.stats.swept.Load()
		st.Sweeps += s.stats.sweeps.Load()
		st.Rebuilds += s.stats.rebuilds.Load()
	}
	return st
}
