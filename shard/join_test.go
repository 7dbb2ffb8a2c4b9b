package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportJoin joins a key's state with one that went its own way from
// it (per second, the larger count), fills a key that holds none, leaves
// alone a key joined with its own past or holding other parameters, and
// takes no tombstone.
func TestImportJoin(t *testing.T) {
	m, err := New(Config{Shards: 4})
	require.NoError(t, err)
	p := window.Params{Kind: window.KindSlide, Limit: 10, Period: time.Minute}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	decide := func(key string, at int64, n int) {
		t.Helper()
		for range n {
			_, err := m.Decide([]byte(key), p, at, 1, false)
			require.NoError(t, err)
		}
	}
	remaining := func(key string) int64 {
		t.Helper()
		d, err := m.Decide([]byte(key), p, now+int64(3*time.Second), 1, true)
		require.NoError(t, err)
		return d.Remaining + 1 // the peek's own
	}
	decide("k", now, 2)
	past, _ := m.Lookup([]byte("k"), nil)
	decide("k", now+int64(time.Second), 3) // here: 2 then 3
	decide("other", now, 1)
	decide("other", now+int64(2*time.Second), 4) // there: 1 then (nothing) then 4
	theirs, _ := m.Lookup([]byte("other"), nil)
	theirs.Key = []byte("k")

	changed, err := m.ImportJoin(theirs, now+int64(3*time.Second))
	require.NoError(t, err)
	assert.True(t, changed)
	assert.EqualValues(t, 10-2-3-4, remaining("k"), "second by second the larger count: 2, 3 and 4")

	changed, err = m.ImportJoin(past, now+int64(3*time.Second))
	require.NoError(t, err)
	assert.False(t, changed, "its own past changes nothing")

	theirs.Key = []byte("new")
	changed, err = m.ImportJoin(theirs, now+int64(3*time.Second))
	require.NoError(t, err)
	assert.True(t, changed, "a missing key is filled")
	assert.EqualValues(t, 10-1-4, remaining("new"))

	token := window.Params{Kind: window.KindToken, Limit: 10, Rate: 1, Period: time.Second}
	_, err = m.Decide([]byte("tok"), token, now, 9, false)
	require.NoError(t, err)
	tok, _ := m.Lookup([]byte("tok"), nil)
	tok.Key = []byte("k")
	changed, err = m.ImportJoin(tok, now+int64(3*time.Second))
	require.NoError(t, err)
	assert.False(t, changed, "a key under other parameters keeps its own")
	assert.EqualValues(t, 1, remaining("k"))

	changed, err = m.ImportJoin(Entry{Key: []byte("k")}, now)
	require.NoError(t, err)
	assert.False(t, changed, "a tombstone deletes nothing")
	_, ok := m.Get([]byte("k"), now)
	assert.True(t, ok)
}
