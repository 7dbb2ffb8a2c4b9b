package shard

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/require"
)

// TestMeasureKindMemory fills N keys per algorithm, each charged a few times,
// and reports MemoryUsage (MEMORY USAGE) of the key user:100000, the
// store's bytes per key (Stats().Bytes: what --maxmemory counts, the keys'
// own bytes and the shards' spare capacity) and the Go heap per key.
// docs/algorithms.md shows its output. Run it with
//
//	RLSTORE_MEASURE_KINDS=200000 go test -run TestMeasureKindMemory -v ./shard/
func TestMeasureKindMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RLSTORE_MEASURE_KINDS"))
	if n == 0 {
		t.Skip("set RLSTORE_MEASURE_KINDS to the number of keys per algorithm")
	}
	cases := []struct {
		name  string
		p     window.Params
		calls int // admitted requests per key, 1 ms apart
	}{
		{"slide 100/60s, 1 req", slideP(100, time.Minute), 1},
		{"slide 100/60s, 10 req over 10 s", slideP(100, time.Minute), 10},
		{"token 100 per 1s", tokenP(100, 100, time.Second), 10},
		{"fixed 100/60s", fixedP(100, time.Minute), 10},
		{"log 100/60s, 10 req", logP(100, time.Minute), 10},
		{"log 100/60s, 100 req", logP(100, time.Minute), 100},
		{"leaky 100 per 1s", leakyP(100, 100, time.Second), 10},
	}
	for _, tc := range cases {
		m, err := New(Config{})
		require.NoError(t, err)
		before := heap()
		key := make([]byte, 0, 16)
		for i := range n {
			key = strconv.AppendInt(append(key[:0], "user:"...), int64(i), 10)
			for c := range tc.calls {
				step := int64(time.Millisecond)
				if tc.name == "slide 100/60s, 10 req over 10 s" {
					step = int64(time.Second)
				}
				_, err := m.Decide(key, tc.p, t0+int64(c)*step, 1, false)
				require.NoError(t, err)
			}
		}
		after := heap()
		st := m.Stats()
		usage, ok := m.MemoryUsage([]byte("user:100000"))
		require.True(t, ok, "user:100000 exists: run with at least 100001 keys")
		t.Logf("%-34s usage=%d B store=%.1f B/key heap=%.1f B/key", tc.name, usage,
			float64(st.Bytes)/float64(n), float64(after-before)/float64(n))
		runtime.KeepAlive(m)
	}
}

func heap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
