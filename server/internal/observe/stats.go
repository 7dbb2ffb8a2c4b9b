package observe

import (
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

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
		if seen >= want && i < len(core.Bounds) {
			return strconv.FormatInt(core.Bounds[i], 10) + ".000"
		}
	}
	return "inf"
}

// Runs counts a connection's runs of one command before they are added to
// its core.Stats in one go (Flush): the Stats are atomics every connection adds
// to, and on two cores each add moved a cache line between them. Only the
// connection's goroutine uses it.
type Runs struct {
	calls   int64
	usec    int64
	buckets [core.Buckets]int32
}

// Observe counts a run that took d.
func (r *Runs) Observe(d time.Duration) {
	us := d.Microseconds()
	r.calls++
	r.usec += us
	r.buckets[core.Bucket(us)]++
}

// Flush adds the runs counted to st, and forgets them.
func (r *Runs) Flush(st *core.Stats) {
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
