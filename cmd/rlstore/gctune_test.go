package main

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{1 << 20, 100},       // small heap: the default headroom
		{16 << 20, 25},       // 4 MiB over 16 MiB live
		{64 << 20, 6},        // 4 MiB over 64 MiB live
		{1 << 30, 5},         // never below the floor
		{^uint64(0) >> 8, 5}, // huge live heaps do not overflow
	} {
		assert.Equal(t, tc.want, gcPercent(tc.live), "gcPercent(%d)", tc.live)
	}
}

// sentinelGOGC is a GC percent tuneGC never chooses, so seeing it again
// proves tuneGC left the setting alone.
const sentinelGOGC = 3 * gcMaxPercent

// withGCPercent sets the GC percent for one test and restores it after.
func withGCPercent(t *testing.T, percent int) {
	old := debug.SetGCPercent(percent)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

func TestTuneGCLeavesOperatorsGOGC(t *testing.T) {
	withGCPercent(t, sentinelGOGC)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		tuneGC(ctx, time.Millisecond, func(k string) (string, bool) { return "50", k == "GOGC" })
		close(done)
	}()
	select {
	case <-done: // it returned without being cancelled
	case <-time.After(10 * time.Second):
		t.Fatal("tuneGC kept tuning although the operator set GOGC")
	}
	require.Equal(t, sentinelGOGC, debug.SetGCPercent(sentinelGOGC), "tuneGC changed the operator's GOGC")
}

// TestTuneGCTunes is the other half: without GOGC, tuneGC does set the GC
// percent, so the test above would notice if it ignored the environment.
func TestTuneGCTunes(t *testing.T) {
	withGCPercent(t, sentinelGOGC)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one pass, then return
	tuneGC(ctx, time.Hour, func(string) (string, bool) { return "", false })
	got := debug.SetGCPercent(sentinelGOGC)
	assert.GreaterOrEqual(t, got, gcMinPercent)
	assert.LessOrEqual(t, got, gcMaxPercent)
}

// TestReleaser: free heap goes back after the live heap has moved a lot and
// then held still, once, and never during steady traffic or a fill.
func TestReleaser(t *testing.T) {
	var r releaser
	steps := []struct {
		live uint64
		want bool
	}{
		{8 << 20, false},   // small and still
		{8 << 20, false},   //
		{40 << 20, false},  // a fill under way
		{80 << 20, false},  //
		{80 << 20, true},   // the fill is over: release
		{80 << 20, false},  // once
		{81 << 20, false},  // steady traffic
		{80 << 20, false},  //
		{100 << 20, false}, // growing again, by less than an eighth since the release
		{100 << 20, true},  // 20 MiB moved and still
		{20 << 20, false},  // keys expired and shards rebuilt
		{20 << 20, true},   //
	}
	for i, s := range steps {
		assert.Equal(t, s.want, r.due(s.live), "tick %d: live %d MiB", i, s.live>>20)
	}
}

func TestMemoryLimit(t *testing.T) {
	assert.Equal(t, int64(math.MaxInt64), memoryLimit(0), "no maxmemory, no limit")
	assert.Equal(t, int64(100<<20+25<<20+64<<20), memoryLimit(100<<20))
	assert.Greater(t, memoryLimit(math.MaxInt64), int64(math.MaxInt64/4), "no overflow")

	before := debug.SetMemoryLimit(-1)
	noEnv := func(string) (string, bool) { return "", false }
	restore := setMemoryLimit(1<<30, noEnv)
	assert.Equal(t, memoryLimit(1<<30), debug.SetMemoryLimit(-1))
	restore()
	assert.Equal(t, before, debug.SetMemoryLimit(-1), "restored")

	restore = setMemoryLimit(1<<30, func(k string) (string, bool) { return "1GiB", k == "GOMEMLIMIT" })
	assert.Equal(t, before, debug.SetMemoryLimit(-1), "the operator's GOMEMLIMIT wins")
	restore()
}
