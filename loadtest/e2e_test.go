package loadtest

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/rlstore/rlstore/loadtest/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startRedis starts redis-server as a child process, skipping when it is
// not installed.
func startRedis(t *testing.T) *proc.Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := proc.StartRedis(ctx, bin, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Stop()) })
	return s
}

// rlstoreBin is the rlstore binary TestMain builds for the end-to-end tests.
var rlstoreBin string

// TestMain builds rlstore once; a server that does not build fails the run.
func TestMain(m *testing.M) {
	os.Exit(rlstoretest.MainBuild(false, func(bin string) int {
		rlstoreBin = bin
		return m.Run()
	}))
}

// startRlstore starts the rlstore TestMain built, through StartRlstore
// (--port 0, the address read from its log), until the test ends.
func startRlstore(t *testing.T) *proc.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := proc.StartRlstore(ctx, rlstoreBin, nil, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Stop()) })
	return s
}

// requireServed fails the test when the server does not know wl's command:
// a command that stops being served is a regression, not a reason to skip.
func requireServed(t *testing.T, addr string, wl Workload) {
	t.Helper()
	require.True(t, supported(context.Background(), addr, wl), "%s is not served", wl.Name)
}

func shortRun(addr string, wl Workload, keys uint64, check bool) Config {
	return Config{
		Addr: addr, Workload: wl, Keys: KeySpec{Prefix: "e2e:" + wl.Name + ":", N: keys, Dist: DistUniform},
		Conns: 4, Pipeline: 8, Requests: 4000, Duration: 20 * time.Second, Check: check, Seed: 1,
	}
}

func TestEndToEndRedisLua(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	lim := Limit{Limit: 20, Window: 2 * time.Second}
	for _, name := range []string{"lua.slide", "lua.fixed", "lua.log", "lua.gcra"} {
		t.Run(name, func(t *testing.T) {
			wl, err := NewWorkload(name, lim)
			require.NoError(t, err)
			res, err := Run(ctx, shortRun(s.Addr, wl, 5, wl.Rule != nil))
			require.NoError(t, err)
			assert.Zero(t, res.Errors, res.FirstError)
			assert.Equal(t, int64(4000), res.Allowed+res.Denied)
			assert.Positive(t, res.Denied, "5 keys × 20 cannot take 4000 at once")
			assert.Positive(t, res.Allowed)
			if a := res.Accuracy; a != nil {
				assert.Zero(t, a.OverAdmitted, "over-admission")
				assert.Zero(t, a.UnderAdmitted, "under-admission")
			}
		})
	}
}

func TestEndToEndRedisCeilingAndMemory(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	cl, err := resp.Dial(ctx, s.Addr)
	require.NoError(t, err)
	defer cl.Close()
	before, err := proc.TakeSnapshot(ctx, cl, s.PID())
	require.NoError(t, err)

	wl, err := NewWorkload("incr", Limit{Limit: 1, Window: time.Second})
	require.NoError(t, err)
	cfg := shortRun(s.Addr, wl, 1000, false)
	cfg.Keys.Dist = DistSeq
	res, err := Run(ctx, cfg)
	require.NoError(t, err)
	assert.Equal(t, int64(4000), res.Requests)

	after, err := proc.TakeSnapshot(ctx, cl, s.PID())
	require.NoError(t, err)
	m := proc.Between(before, after)
	assert.Equal(t, int64(1000), m.KeysAfter-m.KeysBefore)
	assert.Positive(t, m.RSSAfter)
	assert.Equal(t, "/proc VmRSS", m.Source)

	info, err := proc.TakeSnapshot(ctx, cl, 0)
	require.NoError(t, err)
	assert.Positive(t, info.RSS, "INFO memory used_memory_rss")
}

func TestEndToEndRlstore(t *testing.T) {
	s := startRlstore(t)
	ctx := context.Background()
	lim := Limit{Limit: 20, Window: 2 * time.Second}
	for _, name := range []string{"rl.slide", "rl.token"} {
		t.Run(name, func(t *testing.T) {
			wl, err := NewWorkload(name, lim)
			require.NoError(t, err)
			requireServed(t, s.Addr, wl)
			res, err := Run(ctx, shortRun(s.Addr, wl, 5, wl.Rule != nil))
			require.NoError(t, err)
			assert.Zero(t, res.Errors, res.FirstError)
			assert.Positive(t, res.Denied)
			assert.Positive(t, res.Allowed)
			if a := res.Accuracy; a != nil {
				assert.Zero(t, a.OverAdmitted, "over-admission")
				assert.Zero(t, a.UnderAdmitted, "under-admission")
			}
		})
	}
}

// accuracyAcrossWindows keeps 3 keys at a 1-second limit for 2.5 s, so
// decisions are checked across window boundaries, not only within one.
func accuracyAcrossWindows(t *testing.T, addr, name string) {
	t.Helper()
	wl, err := NewWorkload(name, Limit{Limit: 20, Window: time.Second})
	require.NoError(t, err)
	cfg := shortRun(addr, wl, 3, true)
	cfg.Requests, cfg.Duration, cfg.Keys.Prefix = 0, 2500*time.Millisecond, "acc:"+name+":"
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	a := res.Accuracy
	require.NotNil(t, a)
	assert.GreaterOrEqual(t, a.Admits, int64(3*20*2), "at least two windows' worth of admits")
	assert.Zero(t, a.OverAdmitted, "over-admission")
	assert.Zero(t, a.UnderAdmitted, "under-admission")
}

func TestEndToEndAccuracyAcrossWindows(t *testing.T) {
	t.Run("redis lua.slide", func(t *testing.T) { accuracyAcrossWindows(t, startRedis(t).Addr, "lua.slide") })
	t.Run("rlstore rl.slide", func(t *testing.T) {
		s := startRlstore(t)
		wl, err := NewWorkload("rl.slide", Limit{Limit: 1, Window: time.Second})
		require.NoError(t, err)
		requireServed(t, s.Addr, wl)
		accuracyAcrossWindows(t, s.Addr, "rl.slide")
	})
}
