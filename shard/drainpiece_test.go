package shard

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drainPieces drains shard i in pieces of at most max visited slots until
// nothing is left, as a Feed does, and returns every entry and the pieces.
func drainPieces(m *Map, i, max int) (all []Entry, pieces int) {
	for more := true; more; pieces++ {
		var es []Entry
		es, more = m.DrainDirtyUpTo(i, nil, nil, max)
		all = append(all, es...)
	}
	return all, pieces
}

// TestDrainDirtyUpToPieces: a drain in pieces returns each changed key once,
// in pieces no larger than asked, whether the shard lists its changes or
// scans its bitmap, and leaves nothing for the next drain.
func TestDrainDirtyUpToPieces(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	const n = 5000
	for k := range n {
		_, err := m.Decide(fmt.Appendf(nil, "k%d", k), token, xt0, 1, false)
		require.NoError(t, err)
	}
	fill, pieces := drainPieces(m, 0, 97)
	assert.Len(t, fill, n)
	assert.Equal(t, n/97+1, pieces)
	for _, every := range []int{1, 100, 7} { // 100: few enough to list
		var want []string
		for k := 0; k < n; k += every {
			key := fmt.Sprintf("k%d", k)
			_, err := m.Decide([]byte(key), token, xt0+1e9, 1, false)
			require.NoError(t, err)
			want = append(want, key)
		}
		var got []string
		for more := true; more; {
			var es []Entry
			es, more = m.DrainDirtyUpTo(0, nil, nil, 13)
			assert.LessOrEqual(t, len(es), 13, "every %d", every)
			got = append(got, keysOf(es)...)
		}
		assert.ElementsMatch(t, want, got, "every %d", every)
		assert.Empty(t, drainAll(m), "every %d: a second drain has nothing", every)
	}
}

// TestDrainDirtyUpToBetweenPieces: keys changed, deleted and made again
// between the pieces of a drain all reach the drain or the next one, so
// applying what the drains return, in order, gives the Map's state.
func TestDrainDirtyUpToBetweenPieces(t *testing.T) {
	m := trackedMap(t, Config{Shards: 1})
	replica := xMap(t, Config{Shards: 1})
	apply := func(es []Entry) {
		for _, e := range es {
			require.NoError(t, replica.Import(e, xt0))
		}
	}
	const n = 3000
	for k := range n {
		_, err := m.Decide(fmt.Appendf(nil, "k%d", k), slide, xt0, 1, false)
		require.NoError(t, err)
	}
	for round := range 6 {
		now := xt0 + int64(round+1)*int64(time.Second)
		for k := round; k < n; k += 3 {
			_, err := m.Decide(fmt.Appendf(nil, "k%d", k), slide, now, 1, false)
			require.NoError(t, err)
		}
		for more, p := true, 0; more; p++ {
			var es []Entry
			es, more = m.DrainDirtyUpTo(0, nil, nil, 50)
			apply(es)
			// Between pieces: change keys before and after the scan's place,
			// and delete and remake some.
			k := (p * 211) % n
			key := fmt.Appendf(nil, "k%d", k)
			if p%4 == 0 {
				m.Delete(key)
			}
			_, err := m.Decide(key, slide, now, 1, false)
			require.NoError(t, err)
			_, err = m.Decide(fmt.Appendf(nil, "k%d", n-1-k), slide, now, 1, false)
			require.NoError(t, err)
		}
	}
	all, _ := drainPieces(m, 0, 50)
	apply(all)
	assert.Equal(t, exportAll(m), exportAll(replica))
}
