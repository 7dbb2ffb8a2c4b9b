package persistence

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstP and alignedP are a Fixed window started by its first hit and the
// same window aligned to the epoch: they must not come back as each other.
var (
	firstP   = window.Params{Kind: window.KindFixed, Limit: 5, Period: 10 * time.Second, FirstHit: true}
	alignedP = window.Params{Kind: window.KindFixed, Limit: 5, Period: 10 * time.Second}
)

// TestFirstHitRoundTrip: a first-hit window comes back from the log and
// from a snapshot with its anchor and its start, so after a restart it
// still ends Window after its first admission, not at the aligned edge.
func TestFirstHitRoundTrip(t *testing.T) {
	for _, snap := range []bool{false, true} {
		t.Run(fmt.Sprint("snapshot=", snap), func(t *testing.T) {
			dir, c := t.TempDir(), newClock()
			c.add(7 * time.Second) // t0 is aligned: the first hit is 3 s before its edge
			st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
			for _, p := range []window.Params{firstP, alignedP} {
				d, err := m.Decide([]byte(fmt.Sprint(p.FirstHit)), p, c.nano(), 5, false)
				require.NoError(t, err)
				require.True(t, d.Allowed)
			}
			if snap {
				require.NoError(t, st.Snapshot())
			} else {
				flushLog(t, st)
			}
			require.NoError(t, st.Close())
			c.add(5 * time.Second) // past the aligned edge, within the first-hit window
			st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
			defer st2.Close()
			require.EqualValues(t, 1, rec.Keys, "the aligned key expired at its edge")
			info, ok := m2.Get([]byte("true"), c.nano())
			require.True(t, ok)
			assert.Equal(t, firstP, info.Params)
			assert.Equal(t, c.nano()+int64(5*time.Second), info.Expiry, "ends 10 s after its first hit")
			d, err := m2.Decide([]byte("true"), firstP, c.nano(), 1, true)
			require.NoError(t, err)
			assert.False(t, d.Allowed)
			assert.Equal(t, 5*time.Second, d.Wait)
		})
	}
}

// TestParamKindByte: the anchor travels in the kind byte's top bit, and a
// block with it decodes to the same parameters (what replicas and slot
// handoffs ship).
func TestParamKindByte(t *testing.T) {
	assert.Equal(t, byte(window.KindFixed)|paramFirstHit, paramKindByte(firstP))
	assert.Equal(t, byte(window.KindFixed), paramKindByte(alignedP))
	es := []shard.Entry{
		{Key: []byte("a"), Params: firstP, State: window.State{uint64(t0.UnixNano()), 3}},
		{Key: []byte("b"), Params: alignedP, State: window.State{uint64(t0.UnixNano()), 2}},
	}
	var got []shard.Entry
	_, err := DecodeEntries(AppendEntries(nil, es, t0.UnixNano()), func(e *shard.Entry) error {
		c := *e
		c.Key = append([]byte(nil), e.Key...)
		got = append(got, c)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i := range es {
		assert.Equal(t, es[i].Params, got[i].Params)
		assert.Equal(t, es[i].State, got[i].State)
	}
}
