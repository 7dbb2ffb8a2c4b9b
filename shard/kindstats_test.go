package shard

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recountKindsLocked counts s's keys and bytes per kind afresh, each key's
// bytes as MemoryUsage counts them.
func (s *shard) recountKindsLocked() kinds {
	var k kinds
	for i := uint32(0); i < s.slots.next; i++ {
		sl := s.slots.at(i)
		if sl.key == 0 {
			continue
		}
		st := &k[s.params.get(sl.param()).Kind]
		st.Keys++
		st.Bytes += s.baseBytesLocked(sl)
		if sl.state[0] == extMark {
			st.Bytes += 8 * int64(cap(s.ext.counters(uint32(sl.state[1]))))
		}
	}
	return k
}

// TestEveryKindFits: KindStats has a place for every algorithm window names.
func TestEveryKindFits(t *testing.T) {
	for k := range 256 {
		if window.Kind(k).String() != "none" {
			assert.Less(t, k, kindSlots, "window.Kind %d has no place in KindStats", k)
		}
	}
}

var kindParams = []window.Params{
	slideP(100, time.Minute), tokenP(100, 10, time.Second), fixedP(100, time.Minute),
	logP(100, time.Minute), leakyP(100, 10, time.Second),
}

// fillEveryKind makes n keys of each kind, each charged calls times, and
// returns their names by kind.
func fillEveryKind(t *testing.T, m *Map, n, calls int) map[window.Kind][]string {
	keys := map[window.Kind][]string{}
	for _, p := range kindParams {
		for i := range n {
			k := fmt.Sprintf("%s:%d", p.Kind, i)
			for c := range calls {
				_, err := m.Decide([]byte(k), p, t0+int64(c)*int64(time.Second), 1, false)
				require.NoError(t, err)
			}
			keys[p.Kind] = append(keys[p.Kind], k)
		}
	}
	return keys
}

// checkKindStats asserts that KindStats agrees with every key's MemoryUsage
// and, summed, with Len.
func checkKindStats(t *testing.T, m *Map, keys map[window.Kind][]string) {
	t.Helper()
	ks := m.KindStats()
	var sum int64
	for k, names := range keys {
		var bytes int64
		for _, name := range names {
			n, ok := m.MemoryUsage([]byte(name))
			require.True(t, ok, name)
			bytes += n
		}
		assert.Equal(t, KindStat{Keys: int64(len(names)), Bytes: bytes}, ks[k], "%s", k)
		sum += ks[k].Keys
	}
	assert.Equal(t, m.Len(), sum, "keys of every kind add up to Len")
	assert.LessOrEqual(t, total(ks).Bytes, m.Stats().Bytes, "pages hold at least the keys' bytes")
	checkInvariants(t, m)
}

func total(ks [kindSlots]KindStat) KindStat {
	var s KindStat
	for _, k := range ks {
		s.Keys += k.Keys
		s.Bytes += k.Bytes
	}
	return s
}

func TestKindStats(t *testing.T) {
	m := newMap(t, Config{Shards: 4})
	assert.Zero(t, total(m.KindStats()))
	keys := fillEveryKind(t, m, 50, 5) // 5 requests 1 s apart: Slide and Log keys grow counter blocks
	checkKindStats(t, m, keys)
	assert.Equal(t, int64(250), total(m.KindStats()).Keys)

	for k, names := range keys { // delete half of each kind
		for _, name := range names[:25] {
			require.True(t, m.Delete([]byte(name)))
		}
		keys[k] = names[25:]
	}
	checkKindStats(t, m, keys)

	m.Flush()
	assert.Zero(t, total(m.KindStats()), "FLUSHALL leaves no key of any kind")
	checkInvariants(t, m)
}

func TestKindStatsSweepAndRebuild(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	keys := fillEveryKind(t, m, rebuildMin, 3)
	checkKindStats(t, m, keys)
	freed := m.Sweep(t0+int64(time.Hour), 1e9) // every key has long expired
	assert.Equal(t, 5*rebuildMin, freed)
	assert.Zero(t, total(m.KindStats()), "a sweep leaves no key of any kind")
	checkInvariants(t, m)

	keys = fillEveryKind(t, m, rebuildMin, 3)
	for k, names := range keys { // leave a few of each, so a sweep rebuilds the shard
		for _, name := range names[10:] {
			require.True(t, m.Delete([]byte(name)))
		}
		keys[k] = names[:10]
	}
	rebuilds := m.Stats().Rebuilds
	m.Sweep(t0+int64(3*time.Second), 1e9)
	require.Greater(t, m.Stats().Rebuilds, rebuilds, "the shard was rebuilt")
	checkKindStats(t, m, keys)
}

func TestKindStatsImportAndThrottle(t *testing.T) {
	m := newMap(t, Config{Shards: 2})
	keys := fillEveryKind(t, m, 3, 5)
	var entries []Entry
	for i := range m.shards {
		entries = m.ExportShard(i, entries)
	}
	m2 := newMap(t, Config{Shards: 2})
	for _, e := range entries {
		require.NoError(t, m2.Import(e, t0))
	}
	checkKindStats(t, m2, keys)

	_, err := m2.Throttle([]byte("cell"), window.Throttle{MaxBurst: 5, Count: 10, Period: 1}, t0, 1)
	require.NoError(t, err)
	keys[window.KindToken] = append(keys[window.KindToken], "cell")
	checkKindStats(t, m2, keys)
}
