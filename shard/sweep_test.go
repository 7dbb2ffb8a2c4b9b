package shard

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepGrace frees a key only once it has stopped restricting anything
// for longer than the grace period.
func TestSweepGrace(t *testing.T) {
	const grace = 3 * time.Second
	m := newMap(t, Config{Shards: 2, Grace: grace})
	_, err := m.Decide([]byte("slide"), slideP(1, 10*time.Second), t0, 1, false) // restricts until t0+10s
	require.NoError(t, err)
	_, err = m.Decide([]byte("token"), tokenP(5, 1, time.Second), t0, 4, false) // full again at t0+4s
	require.NoError(t, err)
	for _, c := range []struct {
		at   time.Duration
		want []string // keys left
	}{
		{0, []string{"slide", "token"}},
		{4*time.Second + grace, []string{"slide", "token"}}, // token expired exactly grace ago
		{4*time.Second + grace + 1, []string{"slide"}},
		{10*time.Second + grace, []string{"slide"}},
		{10*time.Second + grace + 1, nil},
	} {
		m.Sweep(t0+int64(c.at), 1e6)
		keys, _ := m.Scan(nil, 0, 100)
		assert.ElementsMatch(t, bytesOf(c.want), keys, "after Sweep at t0+%v", c.at)
	}
	checkInvariants(t, m)
	assert.Zero(t, m.Stats().Bytes)
}

func bytesOf(keys []string) [][]byte {
	var b [][]byte
	for _, k := range keys {
		b = append(b, []byte(k))
	}
	return b
}

// TestSweepKeepsRestricting sweeps, far past their first requests, keys that
// still restrict: a busy Slide key, a Slide key with a long window and a
// drained token bucket. None may go, and each keeps its state.
func TestSweepKeepsRestricting(t *testing.T) {
	m, ref := newMap(t, Config{Shards: 1}), newModel()
	now := t0
	for ; now < t0+100*sec; now += sec / 2 {
		decideBoth(t, m, ref, "busy", slideP(1000, 5*time.Second), now, 1, false)
		m.Sweep(now, 1e6)
	}
	decideBoth(t, m, ref, "long", slideP(1, 24*time.Hour), t0, 1, false)
	decideBoth(t, m, ref, "drained", tokenP(10, 1, time.Hour), t0, 10, false)
	m.Sweep(now, 1e6)
	checkKeys(t, m, ref, now)
	assert.Zero(t, m.Stats().Swept)
	now += time.Hour.Nanoseconds()
	assert.Equal(t, 1, m.Sweep(now, 1e6), "the busy key went quiet an hour ago")
	delete(ref.keys, "busy")
	checkKeys(t, m, ref, now)
}

// TestSweepBudget checks that one Sweep visits at most budget slots and each
// slot at most once, and that repeated Sweeps get through everything.
func TestSweepBudget(t *testing.T) {
	m := newMap(t, Config{Shards: 4})
	addKeys(t, m, "k", 1000, slideP(1, time.Second), t0)
	now := t0 + time.Minute.Nanoseconds()
	calls := 0
	for m.Len() > 0 {
		before := m.Len()
		freed := m.Sweep(now, 100)
		assert.LessOrEqual(t, freed, 100)
		assert.EqualValues(t, before-m.Len(), freed)
		calls++
		require.Less(t, calls, 20, "Sweep(now, 100) is not getting through 1000 keys")
	}
	assert.GreaterOrEqual(t, calls, 10)
	assert.EqualValues(t, 1000, m.Stats().Swept)

	one := newMap(t, Config{Shards: 1})
	addKeys(t, one, "k", 10000, slideP(1, time.Second), t0)
	assert.Equal(t, 10000, one.Sweep(now, 1e6), "one call with budget to spare frees every expired key")
	checkInvariants(t, one)
}

// addKeys adds keys prefix0 … prefix(n-1) under p at now.
func addKeys(t testing.TB, m *Map, prefix string, n int, p window.Params, now int64) {
	t.Helper()
	for i := range n {
		d, err := m.Decide(fmt.Appendf(nil, "%s%d", prefix, i), p, now, 1, false)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
}

// TestRebuildGivesMemoryBack fills a Map, lets 99% of its keys expire, and
// checks that the sweep rebuilds every shard and that both the Map's own
// count of bytes and the Go heap shrink to match.
func TestRebuildGivesMemoryBack(t *testing.T) {
	const n = 200_000
	m := newMap(t, Config{Shards: 4})
	heap0 := heapAfterGC()
	for i := range n {
		p := slideP(1, time.Second)
		if i%100 == 0 {
			p = slideP(1, time.Hour)
		}
		_, err := m.Decide(fmt.Appendf(nil, "user:%d", i), p, t0, 1, false)
		require.NoError(t, err)
	}
	full, heapFull := m.Stats().Bytes, heapAfterGC()
	require.Greater(t, heapFull-heap0, uint64(full/2), "the Map's byte count is far above the heap it uses")

	assert.Equal(t, n-n/100, m.Sweep(t0+time.Minute.Nanoseconds(), n))
	assert.EqualValues(t, 4, m.Stats().Rebuilds)
	after, heapAfter := m.Stats().Bytes, heapAfterGC()
	t.Logf("Stats().Bytes %d → %d; heap growth %d → %d", full, after, heapFull-heap0, heapAfter-heap0)
	assert.Less(t, after, full/20, "Stats().Bytes after the rebuild")
	assert.Less(t, heapAfter-heap0, (heapFull-heap0)/10, "heap after the rebuild")
	checkInvariants(t, m)
	runtime.KeepAlive(m)
}

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// scanAll walks m with Scan from cursor 0 to 0, calling between after each step.
func scanAll(m *Map, count int, between func()) map[string]int {
	seen := map[string]int{}
	var keys [][]byte
	for cursor := uint64(0); ; {
		keys, cursor = m.Scan(keys[:0], cursor, count)
		for _, k := range keys {
			seen[string(k)]++
		}
		if cursor == 0 {
			return seen
		}
		between()
	}
}

// missing returns the keys prefix0 … prefix(n-1) that seen lacks.
func missing(seen map[string]int, prefix string, n int) []string {
	var out []string
	for i := range n {
		if k := fmt.Sprintf("%s%d", prefix, i); seen[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

func TestScan(t *testing.T) {
	m := newMap(t, Config{Shards: 16})
	addKeys(t, m, "k", 5000, slideP(1, time.Minute), t0)
	for _, count := range []int{1, 7, 100, 1e6} {
		seen := scanAll(m, count, func() {})
		assert.Len(t, seen, 5000, "Scan(count %d)", count)
		for k, n := range seen {
			assert.Equalf(t, 1, n, "Scan(count %d) returned %q %d times without a rebuild", count, k, n)
		}
	}
}

// TestScanAcrossRebuild rebuilds the shard under a Scan, moving the surviving
// keys to slots the cursor has already passed: they must still be returned.
func TestScanAcrossRebuild(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	addKeys(t, m, "dies", 3100, slideP(1, time.Second), t0)
	addKeys(t, m, "stays", 1000, slideP(1, time.Hour), t0)
	steps := 0
	seen := scanAll(m, 100, func() {
		if steps++; steps == 35 { // the cursor is among the survivors
			require.Equal(t, 3100, m.Sweep(t0+time.Minute.Nanoseconds(), 1e6))
			require.EqualValues(t, 1, m.Stats().Rebuilds)
		}
	})
	assert.Empty(t, missing(seen, "stays", 1000), "keys present throughout but skipped")
}

// TestScanWithConcurrentSweep scans while another goroutine keeps adding
// keys that die and sweeping them, which rebuilds the shards: every key present
// throughout is returned.
func TestScanWithConcurrentSweep(t *testing.T) {
	m := newMap(t, Config{Shards: 2})
	addKeys(t, m, "stays", 2000, slideP(1, time.Hour), t0)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for round := 0; ; round++ {
			select {
			case <-stop:
				return
			default:
			}
			for i := range 10000 {
				_, err := m.Decide(fmt.Appendf(nil, "dies%d-%d", round, i), slideP(1, time.Second), t0, 1, false)
				assert.NoError(t, err)
			}
			m.Sweep(t0+time.Minute.Nanoseconds(), 1e6)
		}
	}()
	for scans := 0; scans < 3 || m.Stats().Rebuilds < 4; scans++ {
		seen := scanAll(m, 10, func() {})
		assert.Empty(t, missing(seen, "stays", 2000), "keys present throughout but skipped")
	}
	close(stop)
	<-done
	checkInvariants(t, m)
}

// TestRebuildCounterBlocks rebuilds shards holding counter blocks: once
// because most keys died (the survivors' blocks are copied across), and once
// because live keys moved their counters back inline, leaving the block
// pages mostly free. Every key's state must come through unchanged.
func TestRebuildCounterBlocks(t *testing.T) {
	const longKeys = 300
	m, ref := newMap(t, Config{Shards: 1}), newModel()
	long, short := slideP(1e6, time.Hour), slideP(1e6, time.Second)
	for i := range 4 * longKeys {
		decideBoth(t, m, ref, fmt.Sprintf("short%d", i), short, t0, 1, false)
	}
	now := t0
	for range 100 { // 100 counters each: blocks of 128 words
		for i := range longKeys {
			decideBoth(t, m, ref, fmt.Sprintf("long%d", i), long, now, 1, false)
		}
		now += sec
	}
	require.Equal(t, 4*longKeys, m.Sweep(now, 1e6))
	ref.sweep(now, DefaultGrace)
	require.EqualValues(t, 1, m.Stats().Rebuilds, "4 in 5 keys died")
	checkKeys(t, m, ref, now)
	checkInvariants(t, m)

	now += time.Hour.Nanoseconds()
	for i := range longKeys { // the window has passed: back inline
		decideBoth(t, m, ref, fmt.Sprintf("long%d", i), long, now, 1, false)
	}
	s := m.shards[0]
	require.Zero(t, s.ext.words)
	require.GreaterOrEqual(t, s.ext.size, 4*extPage)
	assert.Zero(t, m.Sweep(now, 1e6))
	assert.EqualValues(t, 2, m.Stats().Rebuilds, "counter pages all free")
	assert.Zero(t, s.ext.size)
	checkKeys(t, m, ref, now)
	checkInvariants(t, m)
}
