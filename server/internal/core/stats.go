package core

import (
	"sync/atomic"
	"time"
)

// Bounds are the upper bounds, in microseconds, of the latency histograms'
// buckets (one more bucket holds the rest). They follow Redis's
// latencystats percentiles closely enough and Prometheus's usual spread.
var Bounds = [...]int64{10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000, 1000000}

// Buckets is the number of a histogram's buckets.
const Buckets = len(Bounds) + 1

// Stats are one command's counters, for INFO commandstats, INFO
// latencystats and /metrics. They are atomics owned by the command's table
// entry (as Redis's struct redisCommand holds its calls and
// microseconds), so recording takes no lock and allocates nothing.
type Stats struct {
	Calls    atomic.Int64 // runs
	Usec     atomic.Int64 // microseconds spent running
	Rejected atomic.Int64 // refused before running: arity, auth, permissions
	Failed   atomic.Int64 // ran and replied with an error
	Buckets  [Buckets]atomic.Int64
}

// Observe records one run that took d.
func (st *Stats) Observe(d time.Duration) {
	us := d.Microseconds()
	st.Calls.Add(1)
	st.Usec.Add(us)
	st.Buckets[Bucket(us)].Add(1)
}

// Bucket returns the latency bucket of a run that took us microseconds.
func Bucket(us int64) int {
	i := 0
	for i < len(Bounds) && us > Bounds[i] {
		i++
	}
	return i
}

// Counts reads the histogram's buckets.
func (st *Stats) Counts() []int64 {
	out := make([]int64, len(st.Buckets))
	for i := range st.Buckets {
		out[i] = st.Buckets[i].Load()
	}
	return out
}
