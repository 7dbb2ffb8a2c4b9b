package shard

import (
	"slices"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deltaOf returns e as a delta leaving its first kept counters to the
// copy, as a backup's decoder hands it over: room for them, zeroed.
func deltaOf(e Entry, kept int) Entry {
	d := e
	d.Kept, d.Digest = uint32(kept), CounterDigest(e.Counters)
	d.Counters = append(make([]uint64, kept), e.Counters[kept:]...)
	return d
}

// TestDeltaCompletesFromTheCopy: a delta completed from the key's state
// equals the whole entry it was cut from, whether the state holds
// counters the entry has dropped since, inline or in a block.
func TestDeltaCompletesFromTheCopy(t *testing.T) {
	p := window.Params{Kind: window.KindSlide, Limit: 1000, Period: time.Hour}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	sec := now / int64(time.Second)
	ctr := func(at int64, n int64) uint64 { c, _ := p.Kind.Counter(sec+at, n); return c }
	for _, c := range []struct {
		name      string
		copy, cur []uint64
		kept      int
	}{
		{"inline to inline", []uint64{ctr(0, 1), ctr(1, 1)}, []uint64{ctr(0, 1), ctr(1, 2)}, 1},
		{"inline to a block", []uint64{ctr(0, 1), ctr(1, 1)}, []uint64{ctr(0, 1), ctr(1, 2), ctr(2, 1), ctr(3, 4)}, 1},
		{"head dropped", []uint64{ctr(0, 1), ctr(1, 1), ctr(2, 1), ctr(3, 1)}, []uint64{ctr(2, 1), ctr(3, 1), ctr(4, 1)}, 2},
		{"a block to inline", []uint64{ctr(0, 1), ctr(1, 1), ctr(2, 1), ctr(3, 1)}, []uint64{ctr(3, 1), ctr(4, 1)}, 1},
		{"last replaced", []uint64{ctr(0, 1), ctr(1, 1), ctr(2, 1), ctr(3, 1)}, []uint64{ctr(0, 1), ctr(1, 1), ctr(2, 1)}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMap(t, Config{})
			key := []byte("k")
			require.NoError(t, m.Import(Entry{Key: key, Params: p, Counters: c.copy}, now))
			whole := Entry{Key: key, Params: p, Counters: c.cur}
			n, err := m.ImportBatch([]Entry{deltaOf(whole, c.kept)}, now)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			got, ok := m.Lookup(key, nil)
			require.True(t, ok)
			assert.Equal(t, c.cur, got.Counters)
		})
	}
}

// TestDeltaMissesKeepTheCopy: a delta that its key's state cannot complete
// is refused with ErrDelta and changes nothing: no state, other
// parameters, too few older counters, other counters (digest).
func TestDeltaMissesKeepTheCopy(t *testing.T) {
	p := window.Params{Kind: window.KindLog, Limit: 100, Period: time.Minute}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	ms := now / int64(time.Millisecond)
	ctr := func(at int64, n int64) uint64 { c, _ := p.Kind.Counter(ms+at, n); return c }
	cur := Entry{Key: []byte("k"), Params: p, Counters: []uint64{ctr(0, 1), ctr(5, 2), ctr(9, 1), ctr(12, 1)}}
	other := p
	other.Limit++
	for _, c := range []struct {
		name string
		copy *Entry
		d    Entry
	}{
		{"no copy", nil, deltaOf(cur, 2)},
		{"other parameters", &Entry{Key: cur.Key, Params: other, Counters: cur.Counters[:3]}, deltaOf(cur, 2)},
		{"too few older counters", &Entry{Key: cur.Key, Params: p, Counters: cur.Counters[1:3]}, deltaOf(cur, 2)},
		{"an older counter differs", &Entry{Key: cur.Key, Params: p, Counters: []uint64{ctr(0, 1), ctr(5, 1), ctr(9, 1)}}, deltaOf(cur, 2)},
		{"a token key", &Entry{Key: cur.Key, Params: p, Counters: cur.Counters[:3]},
			Entry{Key: cur.Key, Params: window.Params{Kind: window.KindToken, Limit: 1, Rate: 1, Period: time.Second}, Kept: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMap(t, Config{})
			if c.copy != nil {
				require.NoError(t, m.Import(*c.copy, now))
			}
			n, err := m.ImportBatch([]Entry{c.d}, now)
			assert.Equal(t, 0, n)
			require.Error(t, err)
			got, ok := m.Lookup(cur.Key, nil)
			if c.copy == nil {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, c.copy.Counters, got.Counters, "the copy stays as it was")
		})
	}
	m := newMap(t, Config{})
	_, err := m.ImportBatch([]Entry{deltaOf(cur, 2)}, now)
	require.ErrorIs(t, err, ErrDelta)
}

// TestTouchMarksTheKeyChanged: Touch makes the next drain hand over a
// key's whole state, and does nothing for a key with none.
func TestTouchMarksTheKeyChanged(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	m.TrackChanges()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	p := window.Params{Kind: window.KindSlide, Limit: 10, Period: time.Minute}
	_, err := m.Decide([]byte("a"), p, now, 1, false)
	require.NoError(t, err)
	require.Len(t, m.DrainDirty(0, nil), 1)
	require.Empty(t, m.DrainDirty(0, nil))
	assert.True(t, m.Touch([]byte("a"), nil))
	assert.False(t, m.Touch([]byte("b"), nil))
	es := m.DrainDirty(0, nil)
	require.Len(t, es, 1)
	assert.Equal(t, "a", string(es[0].Key))
	assert.True(t, slices.Equal(es[0].Counters, func() []uint64 { e, _ := m.Lookup([]byte("a"), nil); return e.Counters }()))
}
