package server

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixedAnchorFirst: with ANCHOR FIRST a window starts at its first
// admission (t0+50s) and lasts the window, where the aligned window would
// have ended at t0+60s; without it RL.FIXED is as before.
func TestFixedAnchorFirst(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		walk(t, clk, c, "RL.FIXED", []wireStep{
			{50 * time.Second, slide(2, "1m", "ANCHOR", "FIRST", "PEEK"), [5]int64{1, 2, 1, 0, 60000}},
			{50 * time.Second, slide(2, "1m", "ANCHOR", "FIRST"), [5]int64{1, 2, 1, 0, 60000}},
			{55 * time.Second, slide(2, "60", "anchor", "first"), [5]int64{1, 2, 0, 0, 55000}},
			{60 * time.Second, slide(2, "60", "ANCHOR", "FIRST"), [5]int64{0, 2, 0, 50000, 50000}}, // aligned, a new window
			{60 * time.Second, slide(2, "60", "COST", 3, "ANCHOR", "FIRST"), [5]int64{0, 2, 0, -1, 50000}},
			{110 * time.Second, slide(2, "60", "ANCHOR", "FIRST", "COST", 2), [5]int64{1, 2, 0, 0, 60000}},
		})
		info, err := c.Do(context.Background(), "RL.INFO", "k").Result()
		require.NoError(t, err)
		assert.Contains(t, flatInfo(info), "anchor=first")
		assert.Equal(t, "fixed", c.Type(context.Background(), "k").Val())
		assert.Equal(t, int64(60000), c.PTTL(context.Background(), "k").Val().Milliseconds())
		// ANCHOR EPOCH (the default) aligns: at t0+110s the window ends at t0+120s.
		assert.Equal(t, [5]int64{1, 2, 1, 0, 10000}, wantDecision(t, c, "RL.FIXED", "e", 2, 60, "ANCHOR", "EPOCH"))
		info, err = c.Do(context.Background(), "RL.INFO", "e").Result()
		require.NoError(t, err)
		assert.NotContains(t, flatInfo(info), "anchor")
	})
}

// flatInfo writes RL.INFO's reply, a RESP2 array or a RESP3 map, as "name=value" words.
func flatInfo(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out = append(out, toStr(v[i])+"="+toStr(v[i+1]))
		}
	case map[any]any:
		for k, x := range v {
			out = append(out, toStr(k)+"="+toStr(x))
		}
	}
	return out
}

func toStr(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func TestFixedAnchorErrors(t *testing.T) {
	_, c := startWithClock(t, 2)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.FIXED", "k", 2, 60, "ANCHOR"}, "ERR syntax error"},
		{[]any{"RL.FIXED", "k", 2, 60, "ANCHOR", "LAST"}, "ERR syntax error"},
		{[]any{"RL.SLIDE", "k", 2, 60, "ANCHOR", "FIRST"}, "ERR ANCHOR applies to RL.FIXED only"},
		{[]any{"RL.LOG", "k", 2, 60, "ANCHOR", "EPOCH"}, "ERR ANCHOR applies to RL.FIXED only"},
		{[]any{"RL.TOKEN", "k", 2, 1, "1s", "ANCHOR", "FIRST"}, "ERR ANCHOR applies to RL.FIXED only"},
	} {
		wantErrReply(t, c, tc.want, tc.args...)
	}
}

// TestFixedAnchorFirstConcurrent: clients racing on one first-hit key are
// admitted exactly limit times in its window, and every admission reports
// the same window end.
func TestFixedAnchorFirstConcurrent(t *testing.T) {
	_, addr := startServer(t, Config{})
	const limit, workers, each = 100, 8, 40
	var admitted atomic.Int64
	ends := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for range workers {
		c := newClient(t, addr, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, err := c.Do(context.Background(), "RL.FIXED", "race", limit, "1h", "ANCHOR", "FIRST").Int64Slice()
				if !assert.NoError(t, err) {
					return
				}
				if v[0] == 1 {
					admitted.Add(1)
					ends <- time.Now().UnixMilli() + v[4]
				}
			}
		}()
	}
	wg.Wait()
	close(ends)
	assert.EqualValues(t, limit, admitted.Load())
	lo, hi := int64(1<<62), int64(0)
	for e := range ends {
		lo, hi = min(lo, e), max(hi, e)
	}
	// One window: every reply names the same end, give or take the
	// milliseconds between a reply and its reading here.
	assert.Less(t, hi-lo, int64(time.Minute/time.Millisecond), "admissions report different windows")
}

// BenchmarkFixedAnchor runs pipelined RL.FIXED through the server's own
// path, parse to reply, with epoch-aligned windows and with ANCHOR FIRST
// side by side (BenchmarkDecisionBatch's method: cpu-ns per decision).
func BenchmarkFixedAnchor(b *testing.B) {
	for _, anchor := range []string{"epoch", "first"} {
		b.Run("anchor="+anchor, func(b *testing.B) {
			s := newTestServer(b, Config{})
			rc := newBenchConn()
			c := benchClient(s, rc)
			var batch []byte
			for k := range 16 {
				args := []string{"RL.FIXED", benchKey(k), "1000000000", "60"}
				if anchor == "first" {
					args = append(args, "ANCHOR", "FIRST")
				}
				batch = append(batch, respCmd(args...)...)
			}
			runBatch(s, c, rc, batch)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			cpu, n := threadCPU(), 0
			for b.Loop() {
				runBatch(s, c, rc, batch)
				n++
			}
			b.ReportMetric(float64(threadCPU()-cpu)/float64(16*n), "cpu-ns/decision")
		})
	}
}

// TestRegionsRefuseAnchorFirst: a global FIXED key's windows are aligned
// to the epoch in every region, so ANCHOR FIRST is refused on it; a local
// key takes it.
func TestRegionsRefuseAnchorFirst(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(_ string, rc *RegionConfig) { rc.Local = []string{"local:*"} })
	ctx := context.Background()
	err := rs[0].rdb.Do(ctx, "RL.FIXED", "k", 10, 60, "ANCHOR", "FIRST").Err()
	require.Error(t, err)
	assert.Equal(t, string(decide.ErrAnchorNotGlobal), err.Error())
	v, err := rs[0].rdb.Do(ctx, "RL.FIXED", "local:k", 10, 60, "ANCHOR", "FIRST").Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 10, 9, 0, 60000}, v)
}
