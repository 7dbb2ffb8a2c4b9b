package shard

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkDecideSteady decides pipelined batches of 16 random keys, with
// Prefetch, on keys that already hold secs seconds of a minute's window, as
// they do under a steady load: rlload's 100k keys at 300k decisions a second
// are each hit about 3 times a second, so a sliding window's key holds a
// counter for nearly every second of its window. Time advances 3.3 µs a
// decision, that same rate.
func BenchmarkDecideSteady(b *testing.B) {
	for _, secs := range []int{1, 4, 12, 60} {
		b.Run("keys=100000/secs="+strconv.Itoa(secs), func(b *testing.B) {
			benchSteady(b, 100_000, secs)
		})
	}
}

func benchSteady(b *testing.B, n, secs int) {
	m, err := New(Config{})
	require.NoError(b, err)
	ks := makeKeys(n)
	p := slideP(1<<32-1, time.Minute)
	now := time.Now().UnixNano()
	for range secs {
		for i := range n {
			_, _ = m.Decide(ks.key(i), p, now, 1, false)
		}
		now += int64(time.Second)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([][]byte, prefetchWidth)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu, decisions := threadCPU(), 0
	for b.Loop() {
		for j := range batch {
			batch[j] = ks.key(rng.IntN(n))
		}
		m.Prefetch(batch, nil)
		for _, k := range batch {
			now += 3300
			_, _ = m.Decide(k, p, now, 1, false)
		}
		decisions += len(batch)
	}
	b.ReportMetric(float64(threadCPU()-cpu)/float64(decisions), "cpu-ns/decision")
}
