package loadtest

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/fakeserver"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/rlstore/rlstore/loadtest/internal/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisSystem starts a redis-server we own, skipping when it is missing.
func redisSystem(t *testing.T, name string) *proc.System {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sys, err := proc.StartSystem(ctx, name, func(ctx context.Context) (*proc.Server, error) {
		return proc.StartRedis(ctx, bin, nil)
	})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sys.Close()) })
	return sys
}

// TestBenchPipeline runs the whole bench recipe, tiny, with Redis playing
// both parts, so that every step and the report are exercised.
func TestBenchPipeline(t *testing.T) {
	rl, redis := redisSystem(t, "rlstore"), redisSystem(t, "redis")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := BenchConfig{
		Rlstore: rl, Redis: redis,
		Pairs: []report.Pair{{Native: "lua.slide", Redis: "lua.slide"}, {Native: "rl.slide", Redis: "lua.slide"}, {Native: "lua.gcra", Redis: ""}},
		Conns: 2, Duration: 100 * time.Millisecond, Depths: []int{1, 16}, SweepDepths: []int{1, 4, 16},
		Keyspace: 1000, Limit: Limit{Limit: 100, Window: time.Minute}, MemKeys: 2000,
		Acc: AccuracyPlan{Keys: 3, Limit: Limit{Limit: 10, Window: time.Second}, Conns: 2, Pipeline: 2, Duration: 300 * time.Millisecond},
	}
	rep, err := Bench(ctx, cfg, proc.DescribeMachine(ctx, "redis-server"))
	require.NoError(t, err)

	require.Len(t, rep.Rows, 4, "rows rlstore does not serve are left out")
	assert.NotNil(t, rep.Rows[0].Rlstore)
	assert.NotNil(t, rep.Rows[0].RedisRes)
	assert.Equal(t, []string{"rl.slide"}, rep.Unserved, "Redis, playing rlstore, does not serve RL.SLIDE")
	assert.Nil(t, rep.Rows[2].RedisRes, "no counterpart")
	require.Len(t, rep.Sweep, 2, "depth 4 for the first pair and INCR")
	require.Len(t, rep.Hot, 1)
	assert.Equal(t, uint64(1), rep.Hot[0].Rlstore.Keyspace)
	require.NotEmpty(t, rep.Memory)
	assert.Positive(t, rep.Memory[0].Rlstore.BytesPerKey)
	assert.Equal(t, "RSS", rep.Memory[0].Rlstore.Basis)
	require.Len(t, rep.Accuracy, 3, "lua.slide on each system, once, and lua.gcra")
	for _, a := range rep.Accuracy {
		assert.Zero(t, a.Result.Accuracy.OverAdmitted, a.System+" "+a.Workload)
		assert.Zero(t, a.Result.Accuracy.UnderAdmitted, a.System+" "+a.Workload)
	}

	series := rep.ChartSeries()
	require.Len(t, series, 3)
	assert.Len(t, series[0].Points, 3, "depths 1, 4, 16")

	var md bytes.Buffer
	rep.WriteMarkdown(&md, MarkdownOptions{Command: "bash loadtest/bench.sh", Chart: "chart.svg"})
	for _, want := range []string{"# Benchmarks", "## Machine", "## Method", "| lua.slide | lua.slide | 16 |", "## Memory per key", "## Accuracy", "## Targets", "### One hot key", "![throughput", "not compared: rl.slide"} {
		assert.Contains(t, md.String(), want)
	}
	var text bytes.Buffer
	report.WriteCompare(&text, rep.Rows, rep.Memory)
	assert.Equal(t, 1+len(rep.Rows)+2+len(rep.Memory), strings.Count(text.String(), "\n"))
}

func TestMemoryOnAServerWeDoNotOwnUsesUsedMemory(t *testing.T) {
	owned := redisSystem(t, "redis")
	sys := proc.AddrSystem("redis", owned.Addr())
	ctx := context.Background()
	m, err := MemoryPerKey(ctx, sys, "incr", Limit{Limit: 1, Window: time.Second}, 5000, nil)
	require.NoError(t, err)
	assert.Equal(t, "used_memory", m.Basis)
	assert.Equal(t, int64(5000), m.KeysAfter-m.KeysBefore)
	assert.Positive(t, m.BytesPerKey)
}

func TestRunOnSkipsUnknownCommands(t *testing.T) {
	sys := redisSystem(t, "redis")
	res, err := runOn(context.Background(), sys, "rl.slide", Limit{Limit: 1, Window: time.Second},
		Config{Keys: KeySpec{N: 1, Dist: DistHot}, Conns: 1, Pipeline: 1, Requests: 1})
	require.NoError(t, err)
	assert.Nil(t, res)
}

func TestCompareRecordsARunThatBreaksOff(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	srv.DropAfter = 3
	sys := proc.AddrSystem("fake", srv.Addr())
	cfg := Config{Keys: KeySpec{N: 10, Dist: DistUniform}, Conns: 2, Pipeline: 1, Requests: 100, Duration: 10 * time.Second}
	res, err := runOrRecord(context.Background(), sys, "ping", Limit{Limit: 1, Window: time.Second}, cfg)
	require.NoError(t, err, "a broken run is a result, not the end of the comparison")
	require.NotNil(t, res)
	assert.NotEmpty(t, res.RunError)
	_, cell := report.Tput(res)
	assert.Contains(t, cell, "failed")
}
