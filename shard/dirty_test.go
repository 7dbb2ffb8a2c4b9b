package shard

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func drainAll(m *Map) []Entry {
	var all []Entry
	for i := range m.Shards() {
		all = m.DrainDirty(i, all)
	}
	return all
}

func trackedMap(t testing.TB, cfg Config) *Map {
	m := xMap(t, cfg)
	m.TrackChanges()
	return m
}

func TestDirtyOffByDefault(t *testing.T) {
	m := xMap(t, Config{Shards: 1})
	_, err := m.Decide([]byte("a"), token, xt0, 1, false)
	require.NoError(t, err)
	m.Delete([]byte("a"))
	assert.Empty(t, drainAll(m), "a Map that does not track records nothing")
}

func TestDirtyRecordsChanges(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	assert.Empty(t, drainAll(m))

	for range 3 {
		_, err := m.Decide([]byte("a"), token, xt0, 1, false)
		require.NoError(t, err)
	}
	_, err := m.Decide([]byte("b"), slide, xt0, 1, false)
	require.NoError(t, err)
	_, err = m.Decide([]byte("peeked"), slide, xt0, 1, true)
	require.NoError(t, err)
	_, err = m.Decide([]byte("err"), token, xt0, 0, false)
	require.Error(t, err)

	got := drainAll(m)
	assert.Equal(t, []string{"a", "b"}, keysOf(got), "each changed key once, in order")
	a, _ := m.Get([]byte("a"), xt0)
	assert.Equal(t, a.Expiry, got[0].Expiry(), "the drained state is the current one")
	assert.Empty(t, drainAll(m), "a second drain has nothing")

	assert.True(t, m.Delete([]byte("a")))
	assert.False(t, m.Delete([]byte("a")))
	_, err = m.Decide([]byte("b"), slide, xt0+1e9, 1, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"-a", "b"}, keysOf(drainAll(m)))

	// Deleted then made again: the tombstone comes first, so the state wins.
	_, err = m.Decide([]byte("b"), slide, xt0+2e9, 1, false)
	require.NoError(t, err)
	m.Delete([]byte("b"))
	_, err = m.Decide([]byte("b"), slide, xt0+3e9, 1, false)
	require.NoError(t, err)
	got = drainAll(m)
	require.Equal(t, []string{"-b", "b"}, keysOf(got))
	assert.Equal(t, []uint64{slideCounter(xt0/1e9+3, 1)}, got[1].Counters)
}

// TestDirtyDenials: a denial changes nothing and is not recorded, but new
// parameters on a denied request are.
func TestDirtyDenials(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	one := window.Params{Kind: window.KindSlide, Limit: 1, Period: time.Minute}
	_, err := m.Decide([]byte("a"), one, xt0, 1, false)
	require.NoError(t, err)
	drainAll(m)
	d, err := m.Decide([]byte("a"), one, xt0, 1, false)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	assert.Empty(t, drainAll(m))
	two := one
	two.Period = 2 * time.Minute
	d, err = m.Decide([]byte("a"), two, xt0, 1, false)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	got := drainAll(m)
	require.Len(t, got, 1)
	assert.Equal(t, two, got[0].Params)
}

func TestDirtySlotReuse(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	_, err := m.Decide([]byte("a"), token, xt0, 1, false)
	require.NoError(t, err)
	m.Delete([]byte("a"))
	_, err = m.Decide([]byte("b"), token, xt0, 1, false) // takes a's slot
	require.NoError(t, err)
	assert.Equal(t, []string{"-a", "b"}, keysOf(drainAll(m)))
}

func TestDirtyImport(t *testing.T) {
	m := trackedMap(t, Config{Shards: 2})
	e := Entry{Key: []byte("a"), Params: token, State: window.State{uint64(xt0 + 1e9), uint64(xt0)}}
	require.NoError(t, m.Import(e, xt0))
	assert.Equal(t, []Entry{e}, drainAll(m))
	require.NoError(t, m.Import(e, xt0+2e9))
	assert.Equal(t, []string{"-a"}, keysOf(drainAll(m)), "an expired import deletes")
}

// TestDirtyFlush: a flush moves every slot, so the next drain returns the
// shard's live keys, made after it, and no tombstones.
func TestDirtyFlush(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	_, err := m.Decide([]byte("a"), token, xt0, 1, false)
	require.NoError(t, err)
	m.Flush()
	_, err = m.Decide([]byte("b"), token, xt0, 1, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, keysOf(drainAll(m)))
}

// TestDirtyRebuild: a shard rebuild moves keys to new slots, so the next drain
// returns every live key of that shard.
func TestDirtyRebuild(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1, Grace: time.Nanosecond})
	short := window.Params{Kind: window.KindToken, Limit: 1, Rate: 1, Period: time.Second}
	for k := range 2 * rebuildMin {
		p := short
		if k%8 == 0 {
			p = token // lives longer
		}
		_, err := m.Decide(fmt.Appendf(nil, "k%d", k), p, xt0, 1, false)
		require.NoError(t, err)
	}
	drainAll(m)
	_, err := m.Decide([]byte("k0"), token, xt0+int64(1500*time.Millisecond), 1, false)
	require.NoError(t, err)
	m.Sweep(xt0+int64(1500*time.Millisecond), 1<<20)
	require.Positive(t, m.Stats().Rebuilds)
	got := drainAll(m)
	assert.Len(t, got, int(m.Len()))
	assert.Equal(t, exportAll(m), sortedEntries(got))
	assert.Empty(t, drainAll(m))
}

// TestDirtyManyChanges changes more slots than a shard lists, so the drain
// scans the bitmap: each changed key comes back once, unchanged keys do not,
// and a second drain is empty, across as many rounds as it takes to fill the
// list and overflow it again.
func TestDirtyManyChanges(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	const n = 5000
	for k := range n {
		_, err := m.Decide(fmt.Appendf(nil, "k%d", k), token, xt0, 1, false)
		require.NoError(t, err)
	}
	assert.Len(t, drainAll(m), n)
	for _, every := range []int{1, 3, 100, 1} { // 100: few enough to list
		var want []string
		for k := 0; k < n; k += every {
			key := fmt.Sprintf("k%d", k)
			_, err := m.Decide([]byte(key), token, xt0+1e9, 1, false)
			require.NoError(t, err)
			want = append(want, key)
		}
		got := keysOf(drainAll(m))
		assert.ElementsMatch(t, want, got, "every %d", every)
		assert.Empty(t, drainAll(m), "every %d: a second drain has nothing", every)
	}
}

func sortedEntries(es []Entry) []Entry {
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
	return es
}

// TestDirtyConcurrent: with decisions racing drains, what the drains return,
// applied in order, ends at the Map's state.
func TestDirtyConcurrent(t *testing.T) {
	m := trackedMap(t, Config{Shards: 4})
	replica := xMap(t, Config{Shards: 2})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20000 {
			key := fmt.Appendf(nil, "k%d", i%97)
			if i%13 == 0 {
				m.Delete(key)
				continue
			}
			_, _ = m.Decide(key, slide, xt0+int64(i)*int64(time.Millisecond), 1, false)
		}
	}()
	apply := func() {
		for _, e := range drainAll(m) {
			require.NoError(t, replica.Import(e, xt0))
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		apply()
	}
	apply()
	assert.Equal(t, exportAll(m), exportAll(replica))
}

// BenchmarkDirtyDecide compares decisions on a Map that tracks changes, with
// a drain every 4096 decisions as a log would, to one that does not.
func BenchmarkDirtyDecide(b *testing.B) {
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%d", i)
	}
	for _, track := range []bool{false, true} {
		b.Run(fmt.Sprintf("track=%v", track), func(b *testing.B) {
			m := xMap(b, Config{})
			if track {
				m.TrackChanges()
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					_, _ = m.Decide(keys[i&(len(keys)-1)], token, xt0, 1, false)
					i++
				}
			})
		})
	}
}

// A log drains every shard every flush. With an ExportBuffer the drains of a
// busy shard allocate nothing once warm: with a fresh buffer each, filling 1M
// keys made 143 MB of garbage, which set the pace of collections and the
// heap's size.
func TestDrainDirtyToReusesItsBuffer(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	keys := make([][]byte, 200)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%07d:api", i)
	}
	var buf ExportBuffer
	var ents []Entry
	now := xt0
	round := func() {
		now++
		for _, k := range keys {
			_, err := m.Decide(k, slide, now, 1, false)
			require.NoError(t, err)
		}
		ents = m.DrainDirtyTo(0, ents[:0], &buf)
	}
	round()
	require.Equal(t, len(keys), len(ents))
	allocs := testing.AllocsPerRun(20, round)
	assert.Zero(t, allocs, "a warm drain allocates nothing")
	for i, e := range ents {
		assert.Equal(t, keys[i], e.Key, "entries point at this drain's keys")
		assert.NotEmpty(t, e.Counters)
	}
}

// An ExportBuffer does not keep the memory of a burst past maxKeptBuffer.
func TestExportBufferDropsABurst(t *testing.T) {
	m := xMap(t, Config{Shards: 1})
	n := maxKeptBuffer/10 + 1000
	for i := range n {
		_, err := m.Decide(fmt.Appendf(nil, "k:%013d", i), token, xt0, 1, false)
		require.NoError(t, err)
	}
	var buf ExportBuffer
	ents := m.ExportShardTo(0, nil, &buf)
	require.Len(t, ents, n)
	assert.Nil(t, buf.keys, "a burst's key buffer is let go")
	ents = m.ExportShardTo(0, ents[:0], &buf)
	require.Len(t, ents, n)
	assert.Equal(t, fmt.Appendf(nil, "k:%013d", n-1), ents[n-1].Key)
}
