package hist

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: 2^subBits linear sub-buckets per
// power of two bound the relative error of any reported value by 2^-subBits
// (0.78%), as an HDR histogram with two significant digits does.
const subBits = 7

const (
	subCount   = 1 << subBits
	numBuckets = (64-subBits)*subCount + subCount
)

// Histogram is a log-linear (HDR-style) histogram of non-negative durations
// in nanoseconds. Its zero value is empty and ready to use. It is not safe for
// concurrent use: give each worker its own and Merge them at the end.
type Histogram struct {
	counts [numBuckets]uint64
	total  uint64
	min    uint64
	max    uint64
}

// bucketOf returns the bucket index for v: exact below 2·subCount, otherwise
// keyed by bit length and the subBits bits after the leading one.
func bucketOf(v uint64) int {
	if v < 2*subCount {
		return int(v)
	}
	l := bits.Len64(v)
	shift := l - subBits - 1
	return (shift+1)<<subBits + int(v>>shift) - subCount
}

// bucketRange returns the smallest and largest value that map to bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*subCount {
		return uint64(i), uint64(i)
	}
	shift := i>>subBits - 1
	m := uint64(i&(subCount-1)) + subCount
	lo = m << shift
	return lo, lo + (1 << shift) - 1
}

// Record adds one observation; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	if h.total == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.total++
}

// Merge adds every observation of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.total += o.total
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 { return h.total }

// Max returns the largest observation, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns a value v such that at least a fraction q of observations
// are ≤ v, never under-reporting: it is the upper bound of the bucket holding
// the observation of rank ceil(q·n), clamped to the exact maximum.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			_, hi := bucketRange(i)
			return time.Duration(min(hi, h.max))
		}
	}
	return time.Duration(h.max)
}

// Percentiles is the latency summary every report prints.
type Percentiles struct {
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`
}

// Summary returns the standard percentiles.
func (h *Histogram) Summary() Percentiles {
	return Percentiles{
		P50:  h.Quantile(0.50),
		P90:  h.Quantile(0.90),
		P99:  h.Quantile(0.99),
		P999: h.Quantile(0.999),
		Max:  h.Max(),
	}
}
