package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevert takes back a charge on an existing key and on a new one, and
// leaves alone a key changed again since.
func TestRevert(t *testing.T) {
	m, err := New(Config{Shards: 4})
	require.NoError(t, err)
	p := window.Params{Kind: window.KindSlide, Limit: 5, Period: time.Minute}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	charge := func(key string) (*Entry, *Entry) {
		var before *Entry
		if e, ok := m.Lookup([]byte(key), nil); ok {
			before = &e
		}
		_, err := m.Decide([]byte(key), p, now, 1, false)
		require.NoError(t, err)
		after, ok := m.Lookup([]byte(key), nil)
		require.True(t, ok)
		return before, &after
	}
	charge("a")
	b1, a1 := charge("a")
	require.NotNil(t, b1)
	assert.True(t, m.Revert([]byte("a"), nil, b1, a1))
	d, err := m.Decide([]byte("a"), p, now, 1, true)
	require.NoError(t, err)
	assert.EqualValues(t, 3, d.Remaining, "one charge left after the revert, and the peek's own")

	b2, a2 := charge("new")
	assert.Nil(t, b2)
	assert.True(t, m.Revert([]byte("new"), nil, b2, a2))
	_, ok := m.Get([]byte("new"), now)
	assert.False(t, ok)

	b3, a3 := charge("a")
	charge("a")
	assert.False(t, m.Revert([]byte("a"), nil, b3, a3), "a key changed since is left alone")
}

// TestImportMissing fills a key that holds no state, or only expired
// state, and leaves a live key as it is; a tombstone changes nothing.
func TestImportMissing(t *testing.T) {
	m, err := New(Config{Shards: 4})
	require.NoError(t, err)
	p := window.Params{Kind: window.KindSlide, Limit: 5, Period: time.Minute}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for range 2 {
		_, err := m.Decide([]byte("src"), p, now, 1, false)
		require.NoError(t, err)
	}
	two, ok := m.Lookup([]byte("src"), nil)
	require.True(t, ok)

	_, err = m.Decide([]byte("live"), p, now, 1, false)
	require.NoError(t, err)
	two.Key = []byte("live")
	stored, err := m.ImportMissing(two, now)
	require.NoError(t, err)
	assert.False(t, stored, "a live key keeps its state")
	d, err := m.Decide([]byte("live"), p, now, 1, true)
	require.NoError(t, err)
	assert.EqualValues(t, 3, d.Remaining, "one charge, and the peek's own")

	two.Key = []byte("gone")
	stored, err = m.ImportMissing(two, now)
	require.NoError(t, err)
	assert.True(t, stored, "a missing key is filled")
	d, err = m.Decide([]byte("gone"), p, now, 1, true)
	require.NoError(t, err)
	assert.EqualValues(t, 2, d.Remaining, "the imported two charges, and the peek's own")

	_, err = m.Decide([]byte("old"), p, now-int64(time.Hour), 1, false)
	require.NoError(t, err)
	two.Key = []byte("old")
	stored, err = m.ImportMissing(two, now)
	require.NoError(t, err)
	assert.True(t, stored, "a key whose state has expired is filled")

	stored, err = m.ImportMissing(Entry{Key: []byte("live")}, now)
	require.NoError(t, err)
	assert.False(t, stored, "a tombstone deletes nothing")
	_, ok = m.Get([]byte("live"), now)
	assert.True(t, ok)
}

// BenchmarkLookup is the lookup the server makes before and after each write
// under appendfsync always, to take a refused change back.
func BenchmarkLookup(b *testing.B) {
	m, err := New(Config{Shards: 16})
	require.NoError(b, err)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, p := range []window.Params{
		{Kind: window.KindSlide, Limit: 5, Period: time.Minute},
		{Kind: window.KindToken, Limit: 5, Rate: 1, Period: time.Minute},
	} {
		key := []byte("key:" + p.Kind.String())
		_, err := m.Decide(key, p, now, 1, false)
		require.NoError(b, err)
		b.Run(p.Kind.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := m.Lookup(key, nil); !ok {
					b.Fatal("no entry")
				}
			}
		})
	}
}
