package main

import (
	"context"
	"math"
	"runtime"
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
		{16 << 20, 12},       // 2 MiB over 16 MiB live
		{48 << 20, 4},        // 2 MiB over 48 MiB live (1M keys)
		{1 << 30, 3},         // never below the floor
		{^uint64(0) >> 8, 3}, // huge live heaps do not overflow
	} {
		assert.Equal(t, tc.want, gcPercent(tc.live), "gcPercent(%d)", tc.live)
		var b *gcBudget
		assert.Equal(t, tc.want, b.percent(tc.live), "no budget: the default")
	}
	var b gcBudget
	b.forGateway()
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 800},
		{4 << 20, 800},  // 32 MiB over 4 MiB: the cap
		{16 << 20, 400}, // 64 MiB over 16 MiB
		{1 << 30, 6},    // 64 MiB over 1 GiB
		{64 << 30, 3},   // the floor
	} {
		assert.Equal(t, tc.want, b.percent(tc.live), "with the gateway: percent(%d)", tc.live)
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
		tuneGC(ctx, time.Millisecond, func(k string) (string, bool) { return "50", k == "GOGC" }, nil)
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
	tuneGC(ctx, time.Hour, func(string) (string, bool) { return "", false }, nil)
	got := debug.SetGCPercent(sentinelGOGC)
	assert.GreaterOrEqual(t, got, gcMinPercent)
	assert.LessOrEqual(t, got, gcMaxPercent)
}

// TestLimiter: the tight limit follows the heap down as well as up, but
// never rises above a limit someone else set, and adopts a new one at once.
func TestLimiter(t *testing.T) {
	var l limiter
	steps := []struct {
		current, tight, want int64
	}{
		{math.MaxInt64, 10 << 20, 10 << 20},   // no limit set: tight
		{10 << 20, 80 << 20, 80 << 20},        // a fill: up
		{80 << 20, 30 << 20, 30 << 20},        // rebuilds freed memory: down
		{200 << 20, 30 << 20, 30 << 20},       // --maxmemory set 200 MiB
		{30 << 20, 300 << 20, 200 << 20},      // never above it
		{200 << 20, 100 << 20, 100 << 20},     //
		{math.MaxInt64, 500 << 20, 500 << 20}, // run restored no limit
	}
	for i, s := range steps {
		assert.Equal(t, s.want, l.next(s.current, s.tight), "tick %d", i)
	}
}

// TestReleaser: the free heap goes back once a few MiB have been allocated
// since the last release and allocation has gone quiet, once, and never
// while allocation is busy.
func TestReleaser(t *testing.T) {
	var r releaser
	const mb = 1 << 20
	steps := []struct {
		allocs uint64
		want   bool
	}{
		{2 * mb, false},   // starting up
		{2 * mb, false},   // quiet, but little allocated
		{100 * mb, false}, // a fill under way
		{200 * mb, false}, //
		{200 * mb, true},  // the fill is over: release
		{200 * mb, false}, // once
		{203 * mb, false}, // busy traffic is never quiet
		{206 * mb, false}, //
		{206 * mb, true},  // quiet after 6 MiB
		{207 * mb, false}, // a trickle, quiet but little allocated
		{207 * mb, false}, //
	}
	for i, s := range steps {
		assert.Equal(t, s.want, r.due(s.allocs), "tick %d: %d MiB allocated", i, s.allocs/mb)
	}
}

func TestTightLimit(t *testing.T) {
	got := tightLimit(60<<20, 5<<20)
	assert.GreaterOrEqual(t, got*95/100, int64(65<<20), "the scavenger's target keeps goal and overhead")
	assert.LessOrEqual(t, got, int64(65<<20)*100/95+limitSlack+100)
	assert.Positive(t, tightLimit(math.MaxUint64/2, math.MaxUint64/2), "no overflow")
}

// TestTuneGCSetsLimit: without GOMEMLIMIT one pass sets a finite memory
// limit; with it, the limit is left alone.
func TestTuneGCSetsLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	for _, env := range []string{"", "GOMEMLIMIT"} {
		debug.SetMemoryLimit(math.MaxInt64)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // one pass, then return
		tuneGC(ctx, time.Hour, func(k string) (string, bool) { return "1GiB", k == env }, nil)
		got := debug.SetMemoryLimit(math.MaxInt64)
		if env == "" {
			assert.Less(t, got, int64(math.MaxInt64), "tuneGC set no limit")
		} else {
			assert.Equal(t, int64(math.MaxInt64), got, "tuneGC overrode GOMEMLIMIT")
		}
	}
}

// TestTuneGCAfterCollection: a collection retunes at once, not at the next
// tick, so memory that grew faster than the limit's slack raises the limit
// before the collector runs back to back against it.
func TestTuneGCAfterCollection(t *testing.T) {
	withGCPercent(t, debug.SetGCPercent(-1))
	before := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		tuneGC(ctx, time.Hour, func(string) (string, bool) { return "", false }, nil)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) < math.MaxInt64 },
		10*time.Second, time.Millisecond, "the first pass sets a limit")
	first := debug.SetMemoryLimit(-1)

	grown := make([]byte, 64<<20) // live, and more than any slack
	for i := 0; i < len(grown); i += 4096 {
		grown[i] = 1 // each page touched, so it is memory in use (every byte took 14 s under -race)
	}
	runtime.GC()
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) > first+32<<20 },
		10*time.Second, time.Millisecond, "the limit did not follow the grown heap after a collection")
	runtime.KeepAlive(grown)
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
