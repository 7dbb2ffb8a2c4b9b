package hist

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucketsAreContiguousAndCoverTheirValues(t *testing.T) {
	prevHi := uint64(0)
	for i := 1; i < numBuckets; i++ {
		lo, hi := bucketRange(i)
		require.Equal(t, prevHi+1, lo, "bucket %d starts where %d ended", i, i-1)
		require.GreaterOrEqual(t, hi, lo)
		assert.Equal(t, i, bucketOf(lo), "bucketOf(lo of %d)", i)
		assert.Equal(t, i, bucketOf(hi), "bucketOf(hi of %d)", i)
		prevHi = hi
	}
	assert.Equal(t, uint64(1<<64-1), prevHi, "the last bucket ends at the largest uint64")
}

func TestBucketRelativeErrorIsBounded(t *testing.T) {
	for i := 2 * subCount; i < numBuckets; i++ {
		lo, hi := bucketRange(i)
		assert.LessOrEqual(t, float64(hi-lo)/float64(lo), 1.0/subCount, "bucket %d [%d,%d]", i, lo, hi)
	}
}

func TestQuantileOfUniformSequence(t *testing.T) {
	var h Histogram
	for v := 1; v <= 10000; v++ {
		h.Record(time.Duration(v) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5000 * time.Microsecond}, {0.9, 9000 * time.Microsecond}, {0.99, 9900 * time.Microsecond}, {0.999, 9990 * time.Microsecond}, {1, 10000 * time.Microsecond}} {
		got := h.Quantile(tc.q)
		assert.GreaterOrEqual(t, got, tc.want, "Quantile(%v) never under-reports", tc.q)
		assert.LessOrEqual(t, float64(got-tc.want)/float64(tc.want), 1.0/subCount, "Quantile(%v) = %v, want %v within 0.78%%", tc.q, got, tc.want)
	}
	assert.Equal(t, uint64(10000), h.Count())
	assert.Equal(t, 10000*time.Microsecond, h.Max())
}

func TestQuantileMatchesExactRankOnRandomData(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]time.Duration, 50000)
	for i := range vals {
		vals[i] = time.Duration(r.ExpFloat64() * float64(time.Millisecond))
		h.Record(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := vals[int(q*float64(len(vals)))-1]
		got := h.Quantile(q)
		assert.GreaterOrEqual(t, got, exact, "q=%v", q)
		assert.LessOrEqual(t, float64(got-exact), float64(exact)/subCount+1, "q=%v: got %v exact %v", q, got, exact)
	}
}

func TestSmallValuesAreExact(t *testing.T) {
	var h Histogram
	for _, v := range []time.Duration{3, 3, 7, 200} {
		h.Record(v)
	}
	assert.Equal(t, time.Duration(3), h.Quantile(0.5))
	assert.Equal(t, time.Duration(7), h.Quantile(0.75))
	assert.Equal(t, time.Duration(200), h.Quantile(1))
}

func TestMergeEqualsRecordingEverything(t *testing.T) {
	var a, b, all Histogram
	for v := range 1000 {
		d := time.Duration(v*v) * time.Nanosecond
		all.Record(d)
		if v%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	assert.Equal(t, all.Summary(), m.Summary())
	assert.Equal(t, all.Count(), m.Count())
}

func TestEmptyAndNegative(t *testing.T) {
	var h Histogram
	assert.Equal(t, Percentiles{}, h.Summary())
	h.Record(-5)
	assert.Equal(t, time.Duration(0), h.Quantile(0.99))
	h.Merge(&Histogram{})
	assert.Equal(t, uint64(1), h.Count())
}

func TestQuantileClampsToMax(t *testing.T) {
	var h Histogram
	h.Record(1000003 * time.Nanosecond)
	assert.Equal(t, 1000003*time.Nanosecond, h.Quantile(0.99), "the bucket's upper bound is clamped to the exact max")
}
