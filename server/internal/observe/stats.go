package observe

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Bounds are the upper bounds, in microseconds, of the latency histograms'
// buckets (one more bucket holds the rest). They follow Redis's
// latencystats percentiles closely enough and Prometheus's usual spread.
var Bounds = [...]int64{10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000, 1000000}

// buckets is the number of a histogram's buckets.
const buckets = len(Bounds) + 1

// Stats are one command's counters, for INFO commandstats, INFO
// latencystats and /metrics. They are atomics owned by the command's table
// entry, so recording takes no lock and allocates nothing.
type Stats struct {
	Calls    atomic.Int64 // runs
	Usec     atomic.Int64 // microseconds spent running
	Rejected atomic.Int64 // refused before running: arity, auth, permissions
	Failed   atomic.Int64 // ran and replied with an error
	Buckets  [buckets]atomic.Int64
}

// Observe records one run that took d.
func (st *Stats) Observe(d time.Duration) {
	us := d.Microseconds()
	st.Calls.Add(1)
	st.Usec.Add(us)
	st.Buckets[bucketOf(us)].Add(1)
}

// bucketOf returns the latency bucket of a run that took us microseconds.
func bucketOf(us int64) int {
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

// Percentile returns the upper bound of the bucket of counts (as Counts
// returns them) that holds quantile q, as INFO latencystats shows it.
func Percentile(counts []int64, q float64) string {
	var total int64
	for _, n := range counts {
		total += n
	}
	want := int64(float64(total)*q + 0.999999)
	var seen int64
	for i, n := range counts {
		seen += n
		if seen >= want && i < len(Bounds) {
			return strconv.FormatInt(Bounds[i], 10) + ".000"
		}
	}
	return "inf"
}

// Runs counts a connection's runs of one command before they are added to
// its Stats in one go (Flush): the Stats are atomics every connection adds
// to, and on two cores each add moved a cache line between them. Only the
// connection's goroutine uses it.
type Runs struct {
	calls   int64
	usec    int64
	buckets [buckets]int32
}

// Observe counts a run that took d.
func (r *Runs) Observe(d time.Duration) {
	us := d.Microseconds()
	r.calls++
	r.usec += us
	r.buckets[bucketOf(us)]++
}

// Flush adds the runs counted to st, and forgets them.
func (r *Runs) Flush(st *Stats) {
	if r.calls == 0 {
		return
	}
	st.Calls.Add(r.calls)
	st.Usec.Add(r.usec)
	for i, n := range r.buckets {
		if n != 0 {
			st.Buckets[i].Add(int64(n))
			r.buckets[i] = 0
		}
	}
	r.calls, r.usec = 0, 0
}
