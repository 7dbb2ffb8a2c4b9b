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

// The export tests keep their own fixtures, apart from map_test.go's.
var (
	xt0   = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	slide = window.Params{Kind: window.KindSlide, Limit: 100, Period: time.Hour}
	token = window.Params{Kind: window.KindToken, Limit: 10, Rate: 1, Period: time.Second}
)

func xMap(t testing.TB, cfg Config) *Map {
	t.Helper()
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

// exportAll returns every entry of m, sorted by key.
func exportAll(m *Map) []Entry {
	var all []Entry
	for i := range m.Shards() {
		all = m.ExportShard(i, all)
	}
	slices.SortFunc(all, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
	return all
}

// fill makes keys of both kinds, Slide ones with 1, 2 (inline) and up to 40
// (block) counters.
func xFill(t testing.TB, m *Map, n int) {
	t.Helper()
	for k := range n {
		key := fmt.Appendf(nil, "key:%d", k)
		p := token
		if k%2 == 0 {
			p = slide
		}
		for c := range k%40 + 1 {
			_, err := m.Decide(key, p, xt0+int64(c)*int64(time.Second), 1, false)
			require.NoError(t, err)
		}
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	src := xMap(t, Config{Shards: 4})
	xFill(t, src, 300)
	want := exportAll(src)
	require.Len(t, want, 300)

	dst := xMap(t, Config{Shards: 16})
	for _, e := range want {
		require.NoError(t, dst.Import(e, xt0))
	}
	assert.Equal(t, want, exportAll(dst))
	assert.Equal(t, src.Len(), dst.Len())
	assert.Equal(t, dst.Stats().Bytes, dst.bytes.Load())
	assert.Positive(t, dst.Stats().Bytes)

	// Both maps decide alike from here on.
	at := xt0 + int64(50*time.Second)
	for _, e := range want {
		d1, err1 := src.Decide(e.Key, e.Params, at, 3, false)
		d2, err2 := dst.Decide(e.Key, e.Params, at, 3, false)
		require.NoError(t, err1)
		require.NoError(t, err2)
		assert.Equalf(t, d1, d2, "Decide(%s) after Import", e.Key)
	}
}

func TestExportDoesNotAlias(t *testing.T) {
	m := xMap(t, Config{Shards: 1})
	xFill(t, m, 20)
	before := exportAll(m)
	snapshot := exportAll(m)
	xFill(t, m, 20) // changes every key's state and counters
	assert.Equal(t, before, snapshot)
	assert.NotEqual(t, before, exportAll(m))
}

func TestImportReplaces(t *testing.T) {
	m := xMap(t, Config{Shards: 1})
	xFill(t, m, 2) // key:0 Slide with 1 counter, key:1 Token
	big := Entry{Key: []byte("key:1"), Params: slide}
	for s := range int64(30) {
		big.Counters = append(big.Counters, slideCounter(xt0/1e9+s, 2))
	}
	require.NoError(t, m.Import(big, xt0), "Token key becomes a Slide key with a block")
	words := m.shards[0].ext.words
	assert.Positive(t, words)

	small := Entry{Key: []byte("key:1"), Params: token, State: window.State{uint64(xt0 + 5e9), uint64(xt0)}}
	require.NoError(t, m.Import(small, xt0))
	assert.Zero(t, m.shards[0].ext.words, "the counter block was not freed")
	got, ok := m.Get([]byte("key:1"), xt0)
	require.True(t, ok)
	assert.Equal(t, token, got.Params)
	assert.Equal(t, xt0+5e9, got.Expiry)
	assert.Equal(t, int64(2), m.Len())
}

func TestImportExpired(t *testing.T) {
	m := xMap(t, Config{})
	e := Entry{Key: []byte("a"), Params: token, State: window.State{uint64(xt0 + 1e9), uint64(xt0)}}
	require.NoError(t, m.Import(e, xt0))
	require.Equal(t, int64(1), m.Len())

	require.NoError(t, m.Import(e, xt0+1e9), "expired at its expiry")
	assert.Zero(t, m.Len(), "an expired newest state deletes the key")

	s := Entry{Key: []byte("b"), Params: slide, Counters: []uint64{slideCounter(xt0/1e9, 1)}}
	require.NoError(t, m.Import(s, s.Expiry()+1))
	assert.Zero(t, m.Len())
	require.NoError(t, m.Import(Entry{Key: []byte("c"), Params: slide}, xt0), "no counters: nothing to keep")
	assert.Zero(t, m.Len())
}

func TestImportTombstone(t *testing.T) {
	m := xMap(t, Config{})
	xFill(t, m, 3)
	require.NoError(t, m.Import(Entry{Key: []byte("key:1")}, xt0))
	require.NoError(t, m.Import(Entry{Key: []byte("absent")}, xt0))
	assert.Equal(t, int64(2), m.Len())
	_, ok := m.Get([]byte("key:1"), xt0)
	assert.False(t, ok)
}

func TestImportLimits(t *testing.T) {
	m := xMap(t, Config{MaxKeys: 2})
	xFill(t, m, 2)
	e := Entry{Key: []byte("new"), Params: token, State: window.State{uint64(xt0 + 1e9), uint64(xt0)}}
	assert.ErrorIs(t, m.Import(e, xt0), ErrFull)
	e.Key = []byte("key:1")
	assert.NoError(t, m.Import(e, xt0), "an existing key is not a new key")
}

func TestImportRejects(t *testing.T) {
	s := xt0 / 1e9
	for name, e := range map[string]Entry{
		"unknown kind":       {Key: []byte("k"), Params: window.Params{Kind: 9, Limit: 1}},
		"bad params":         {Key: []byte("k"), Params: window.Params{Kind: window.KindSlide, Limit: 1, Period: 1500 * time.Millisecond}},
		"unsorted counters":  {Key: []byte("k"), Params: slide, Counters: []uint64{slideCounter(s+1, 1), slideCounter(s, 1)}},
		"repeated second":    {Key: []byte("k"), Params: slide, Counters: []uint64{slideCounter(s, 1), slideCounter(s, 1)}},
		"empty counter":      {Key: []byte("k"), Params: slide, Counters: []uint64{slideCounter(s, 0)}},
		"slide with state":   {Key: []byte("k"), Params: slide, State: window.State{1, 2}, Counters: []uint64{slideCounter(s, 1)}},
		"token with counter": {Key: []byte("k"), Params: token, State: window.State{uint64(xt0), 0}, Counters: []uint64{1}},
	} {
		m := xMap(t, Config{})
		assert.Errorf(t, m.Import(e, xt0), "Import(%s) = nil, want an error", name)
		assert.Zerof(t, m.Len(), "Import(%s) stored a key", name)
	}
	m := xMap(t, Config{})
	e := Entry{Key: []byte("k"), Params: window.Params{Kind: window.KindSlide, Limit: 1, Period: window.MaxWindow}, Counters: manyCounters(s, 5000)}
	require.NoError(t, m.Import(e, xt0), "more counters than one window spans")
	assert.Equal(t, []Entry{e}, exportAll(m))
}

func manyCounters(end int64, n int) []uint64 {
	b := make([]uint64, n)
	for i := range b {
		b[i] = slideCounter(end-int64(n)+int64(i), 1)
	}
	return b
}

// keysOf names drained entries: "-k" for a tombstone of k, "k" for a state.
func keysOf(es []Entry) []string {
	var s []string
	for _, e := range es {
		if e.Deleted() {
			s = append(s, "-"+string(e.Key))
		} else {
			s = append(s, string(e.Key))
		}
	}
	return s
}

// TestExportKnowsEveryKind is a tripwire: once shard stores a kind beyond
// Slide and Token, ExportShard, Import (setEntryLocked, Entry.check, Expiry)
// and persistence's entry codec must learn where that kind keeps its state.
func TestExportKnowsEveryKind(t *testing.T) {
	for k := range window.Kind(255) {
		p := window.Params{Kind: k, Limit: 1, Rate: 1, Period: time.Second}
		switch k {
		case window.KindSlide, window.KindToken, window.KindFixed, window.KindLog, window.KindLeaky:
			continue
		}
		if check(p, 1) != nil {
			continue
		}
		t.Errorf("shard stores kind %v: teach shard/export.go and persistence/codec.go to save it", k)
	}
}

// slideCounter returns the Slide counter for count units at second sec.
func slideCounter(sec, count int64) uint64 {
	c, ok := window.KindSlide.Counter(sec, count)
	if !ok && count == 0 { // an invalid counter, for the tests that need one
		return uint64(sec) << 32
	}
	return c
}

// TestImportReplacesStateInPlace: importing over a key that has the same
// parameters, with counters that grow, shrink, go inline and come back,
// leaves the key and the Map's accounting as a fresh import of the last
// entry would, and Decide alike from there.
func TestImportReplacesStateInPlace(t *testing.T) {
	m, fresh := xMap(t, Config{Shards: 1}), xMap(t, Config{Shards: 1})
	key := []byte("key:0")
	var e Entry
	for _, n := range []int{1, 3, 30, 31, 6, 2, 14, 60, 1, 7} {
		e = Entry{Key: key, Params: slide}
		for s := range int64(n) {
			e.Counters = append(e.Counters, slideCounter(xt0/1e9+s, 2))
		}
		require.NoError(t, m.Import(e, xt0))
		got, ok := m.Lookup(key, nil)
		require.True(t, ok)
		assert.Equal(t, e.Counters, got.Counters, "%d counters", n)
	}
	require.NoError(t, fresh.Import(e, xt0))
	assert.Equal(t, fresh.Stats().Bytes, m.Stats().Bytes)
	assert.Equal(t, fresh.KindStats(), m.KindStats())
	assert.Equal(t, fresh.shards[0].ext.words, m.shards[0].ext.words)
	at := xt0 + int64(20*time.Second)
	d1, err1 := m.Decide(key, slide, at, 1, false)
	d2, err2 := fresh.Decide(key, slide, at, 1, false)
	require.NoError(t, err1)
	require.NoError(t, err2)
	assert.Equal(t, d2, d1)
}
