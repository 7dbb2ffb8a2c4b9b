package persistence

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCountersEveryVarintSize: counters whose gaps and counts take one,
// two and more bytes, and a first stamp far before or after the block's
// base, come back exactly: the one-byte fast paths of appendCounters and
// counterList hand over to the general ones at 0x80.
func TestCountersEveryVarintSize(t *testing.T) {
	base := t0.UnixNano()
	var es []shard.Entry
	for _, k := range []window.Kind{window.KindSlide, window.KindLog} {
		p := window.Params{Kind: k, Limit: 1000, Period: time.Hour}
		if k == window.KindLog {
			p.Limit = window.MaxLogLimit
		}
		unit := int64(k.Unit())
		for _, first := range []int64{-1 << 20, -200, -64, -63, 0, 63, 64, 1 << 20} {
			var b []uint64
			at := base/unit + first
			for i, gap := range []int64{0, 1, 127, 128, 16383, 16384, 1, 2} {
				at += gap
				c, ok := k.Counter(at, []int64{1, 127, 128, 999, 1, 16384 % p.Limit, 3, 128}[i])
				require.True(t, ok)
				b = append(b, c)
			}
			es = append(es, shard.Entry{Key: fmt.Appendf(nil, "%s:%d", k, first), Params: p, Counters: b})
		}
	}
	var got []shard.Entry
	n, err := DecodeEntries(AppendEntries(nil, es, base), func(e *shard.Entry) error {
		e.Key, e.Counters = append([]byte(nil), e.Key...), append([]uint64(nil), e.Counters...)
		got = append(got, *e)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, len(es), n)
	require.Equal(t, es, got)
}

// TestCountersCutShortAreRefused: an entries block cut at any byte of its
// counters is refused, never read past its end: a transfer's checksum
// guards the block, but the decoder must not trust its lengths.
func TestCountersCutShortAreRefused(t *testing.T) {
	base := t0.UnixNano()
	p := window.Params{Kind: window.KindSlide, Limit: 1000, Period: time.Hour}
	var b []uint64
	for i := range 40 {
		c, _ := p.Kind.Counter(base/int64(time.Second)+int64(i*i*i), int64(1+i*50))
		b = append(b, c)
	}
	blk := appendEntries(nil, []shard.Entry{{Key: []byte("k"), Params: p, Counters: b}}, base)
	payload := blk[frameHead : len(blk)-frameTail]
	var eb entryBlock
	require.Empty(t, eb.parse(payload))
	var e shard.Entry
	require.Empty(t, eb.next(&e))
	require.Equal(t, b, e.Counters)
	for cut := len(payload) - 1; cut > 0; cut-- {
		if eb.parse(payload[:cut]) != "" {
			continue
		}
		for eb.left > 0 {
			if eb.next(&e) != "" {
				break
			}
			require.Failf(t, "read a cut block", "cut at %d of %d", cut, len(payload))
		}
	}
}

// TestDeltaBlocks: AppendDeltaChunks writes a delta's shipped counters
// only, and a Decoder with Deltas hands it over with room for the kept
// ones; whole entries and tombstones come as they went. A Decoder without
// Deltas, and the log's replay, refuse delta blocks as damage: a node that
// takes only whole entries never misreads one.
func TestDeltaBlocks(t *testing.T) {
	now := t0.UnixNano()
	p := window.Params{Kind: window.KindSlide, Limit: 1000, Period: time.Hour}
	var ctrs []uint64
	for i := range 30 {
		c, _ := p.Kind.Counter(now/int64(time.Second)-29+int64(i), 2)
		ctrs = append(ctrs, c)
	}
	cut := shard.Entry{Key: []byte("cut"), Params: p, Counters: ctrs}
	Cut(&cut, now-int64(1500*time.Millisecond))
	require.EqualValues(t, 27, cut.Kept, "the counters from the last one at or before since's second on ship")
	es := []shard.Entry{cut, {Key: []byte("whole"), Params: p, Counters: ctrs[:3]}, {Key: []byte("gone")}, {Key: []byte("tok"), Params: tokenP, State: window.State{1, 2}}}
	fresh := func() []byte { return nil }
	deltas := AppendDeltaChunks(nil, es, now, 1<<20, fresh)
	wholes := AppendEntriesChunks(nil, es, now, 1<<20, fresh)
	require.Len(t, deltas, 1)
	assert.Less(t, len(deltas[0])+40, len(wholes[0]), "a delta of 3 counters is smaller than 30 counters")

	var got []shard.Entry
	d := Decoder{Deltas: true}
	_, err := d.Decode(deltas[0], func(es []shard.Entry) error {
		for _, e := range es {
			e.Key, e.Counters = append([]byte(nil), e.Key...), append([]uint64(nil), e.Counters...)
			got = append(got, e)
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, 4)
	assert.Equal(t, cut.Kept, got[0].Kept)
	assert.Equal(t, cut.Digest, got[0].Digest)
	assert.Equal(t, append(make([]uint64, 27), ctrs[27:]...), got[0].Counters)
	assert.Equal(t, es[1:], got[1:])

	_, err = DecodeBatches(deltas[0], func([]shard.Entry) error { return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "not an entries block")

	log := append(appendHeader(nil, magicLog, now, 1), deltas[0]...)
	_, _, _, err = replayLog(bytes.NewReader(log), int64(len(log)), "log", newMap(t, 2), now)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "unexpected block kind")
}
