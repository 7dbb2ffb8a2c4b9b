package shard

import (
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
	decideBatches(b, m, ks, n, p, now, 3300, true)
}
