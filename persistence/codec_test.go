package persistence

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
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
