package shard

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMeasureMemory measures the resident memory each key costs: 1M distinct
// keys like "user:123456" (11 bytes), each hit twice with Slide limit 100
// window 60 s, the hits a second apart as in a real run. The target is 60
// bytes of RSS per key. It only logs, and only with RLSTORE_MEASURE=1;
// RLSTORE_MEASURE_KEYS changes the number of keys:
//
//	RLSTORE_MEASURE=1 go test -run TestMeasureMemory -v ./shard/
func TestMeasureMemory(t *testing.T) {
	if os.Getenv("RLSTORE_MEASURE") == "" {
		t.Skip("set RLSTORE_MEASURE=1 to measure")
	}
	n := 1_000_000
	if s := os.Getenv("RLSTORE_MEASURE_KEYS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	t.Run("shard", func(t *testing.T) {
		measureRSS(t, n, func() (decider, func() int64) {
			m := newMap(t, Config{})
			return m, func() int64 { return m.Stats().Bytes }
		})
	})
	t.Run("map[string]*entry", func(t *testing.T) {
		measureRSS(t, n, func() (decider, func() int64) {
			return &baseline{m: make(map[string]*baseEntry)}, func() int64 { return 0 }
		})
	})
}

// measureRSS fills a decider made by build with n keys, each hit twice, and
// logs the growth in RSS and Go heap per key.
func measureRSS(t *testing.T, n int, build func() (decider, func() int64)) {
	rss0, heap0 := settle(t)
	d, accounted := build()
	p := slideP(100, time.Minute)
	keyLen := 0
	for hit := range int64(2) {
		var key []byte
		for i := range n {
			key = fmt.Appendf(key[:0], "user:%06d", i)
			keyLen = len(key)
			_, err := d.Decide(key, p, t0+hit*sec, 1, false)
			require.NoError(t, err)
		}
	}
	rss1, heap1 := settle(t)
	t.Logf("%d keys of %d bytes, hit twice: RSS %.1f B/key, heap %.1f B/key, Stats().Bytes %.1f B/key",
		n, keyLen, float64(rss1-rss0)/float64(n), float64(heap1-heap0)/float64(n), float64(accounted())/float64(n))
	runtime.KeepAlive(d)
}

// settle collects garbage, returns free memory to the OS, and reports the
// resident set size (from /proc/self/statm) and the live heap.
func settle(t *testing.T) (rss, heap int64) {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	require.NoError(t, err)
	var size, resident int64
	_, err = fmt.Sscan(string(b), &size, &resident)
	require.NoError(t, err)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return resident * int64(os.Getpagesize()), int64(ms.HeapAlloc)
}
