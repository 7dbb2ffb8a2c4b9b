package loadtest

import (
	"context"
	"testing"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/fakeserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fakeSlide(limit, window string) Workload {
	w, _ := CustomWorkload("FAKE.SLIDE {key} "+limit+" "+window, nil)
	return w
}

func baseConfig(addr string) Config {
	return Config{
		Addr: addr, Workload: fakeSlide("50", "2"),
		Keys:  KeySpec{Prefix: "k:", N: 10, Dist: DistUniform},
		Conns: 4, Pipeline: 8, Requests: 2000, Duration: 30 * time.Second, Seed: 1,
	}
}

func TestRunClosedLoopStopsAtRequestCount(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	res, err := Run(context.Background(), baseConfig(srv.Addr()))
	require.NoError(t, err)
	assert.Equal(t, int64(2000), res.Requests)
	assert.Equal(t, int64(2000), res.Allowed+res.Denied)
	assert.Positive(t, res.Denied, "10 keys × 50 per window cannot admit 2000 at once")
	assert.Equal(t, uint64(2000), uint64(res.Requests))
	assert.Positive(t, res.Throughput)
	assert.LessOrEqual(t, res.Latency.P50, res.Latency.P99)
	assert.LessOrEqual(t, res.Latency.P99, res.Latency.Max)
}

func TestRunChecksAccuracy(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cfg := baseConfig(srv.Addr())
	cfg.Check = true
	cfg.Workload.Rule = &accuracy.Rule{Limit: 50, Unit: time.Second, Units: 2, Cost: 1}
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Accuracy)
	assert.Equal(t, res.Allowed, res.Accuracy.Admits)
	assert.Equal(t, res.Denied, res.Accuracy.Denials)
	assert.Zero(t, res.Accuracy.OverAdmitted, "the fake limiter is exact")
	assert.Zero(t, res.Accuracy.UnderAdmitted, "the fake limiter is exact")
}

func TestRunCatchesAnOverAdmittingServer(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cfg := baseConfig(srv.Addr())
	cfg.Check = true
	// The server enforces 50 per 2 s; hold it to 10 per 2 s.
	cfg.Workload.Rule = &accuracy.Rule{Limit: 10, Unit: time.Second, Units: 2, Cost: 1}
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Positive(t, res.Accuracy.OverAdmitted)
}

func TestRunOpenLoop(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cfg := baseConfig(srv.Addr())
	cfg.Rate, cfg.Requests = 20000, 500
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, int64(500), res.Requests)
	assert.Positive(t, res.Latency.P50)
	require.NotNil(t, res.SendLag, "an open loop reports its own lateness")
	assert.LessOrEqual(t, res.SendLag.Max, res.Latency.Max, "lateness is part of latency")
}

func TestRunStopsAtDuration(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cfg := baseConfig(srv.Addr())
	cfg.Requests, cfg.Duration = 0, 200*time.Millisecond
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Positive(t, res.Requests)
	assert.Less(t, res.Elapsed, 10*time.Second)
}

func TestRunStopsWhenCancelled(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cfg := baseConfig(srv.Addr())
	cfg.Requests, cfg.Duration, cfg.Rate = 0, time.Hour, 1000
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, cfg)
	assert.Error(t, err, "a cancelled run reports why it stopped")
}

func TestRunSetupFailureStopsTheRun(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cfg := baseConfig(srv.Addr())
	cfg.Workload.Setup = [][]string{{"NOPE"}}
	_, err := Run(context.Background(), cfg)
	assert.ErrorContains(t, err, "setup")
}

func TestRunCountsErrors(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cfg := baseConfig(srv.Addr())
	cfg.Workload, _ = CustomWorkload("NOPE {key}", nil)
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, res.Requests, res.Errors)
	assert.Contains(t, res.FirstError, "unknown command")
}

func TestConfigValidate(t *testing.T) {
	good := baseConfig("127.0.0.1:1")
	require.NoError(t, good.Validate())
	for name, mutate := range map[string]func(*Config){
		"no conns":    func(c *Config) { c.Conns = 0 },
		"no pipeline": func(c *Config) { c.Pipeline = 0 },
		"unbounded":   func(c *Config) { c.Requests, c.Duration = 0, 0 },
		"no rule":     func(c *Config) { c.Check = true },
		"no command":  func(c *Config) { c.Workload.Args = nil },
		"no keys":     func(c *Config) { c.Keys.N = 0 },
		"bad zipf":    func(c *Config) { c.Keys.Dist, c.Keys.ZipfS = DistZipf, 1 },
		"bad dist":    func(c *Config) { c.Keys.Dist = "nope" },
	} {
		c := good
		mutate(&c)
		assert.Error(t, c.Validate(), name)
	}
}

func TestKeyDistributions(t *testing.T) {
	seen := map[uint64]int{}
	pick := KeySpec{N: 100, Dist: DistZipf, ZipfS: 1.2}.pickers(1, 1)[0]
	for range 10000 {
		seen[pick()]++
	}
	assert.Greater(t, seen[0], seen[50]*5, "zipf favours low keys")
	hot := KeySpec{N: 100, Dist: DistHot}.pickers(1, 1)[0]
	assert.Equal(t, uint64(0), hot())
	seq := KeySpec{N: 3, Dist: DistSeq}.pickers(2, 1)
	a, b := seq[0], seq[1]
	assert.Equal(t, []uint64{0, 1, 2, 0}, []uint64{a(), a(), b(), b()}, "seq workers share one counter")
	uni := KeySpec{N: 10, Dist: DistUniform}.pickers(2, 1)
	for range 100 {
		assert.Less(t, uni[0](), uint64(10))
	}
}

// TestOpenLoopChargesTheWait holds every reply until the 50th request has
// arrived. At 1000 requests per second the 50th is due 49 ms after the
// first and written at most openEarly before that, and the first request's
// reply cannot come sooner, so the maximum latency must show at least 48 ms:
// latency counts from the schedule, not from the reply.
func TestOpenLoopChargesTheWait(t *testing.T) {
	srv := fakeserver.Start(t, 50)
	cfg := baseConfig(srv.Addr())
	cfg.Conns, cfg.Pipeline, cfg.Rate, cfg.Requests = 1, 1, 1000, 50
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, int64(50), res.Requests)
	assert.GreaterOrEqual(t, res.Latency.Max, 49*time.Millisecond-openEarly)
	assert.GreaterOrEqual(t, res.Elapsed, 49*time.Millisecond-openEarly, "the schedule spreads 50 requests over 49 ms")
}
