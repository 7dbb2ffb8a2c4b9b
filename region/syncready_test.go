package region

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// TestSyncReadyCatchesUp: a Sync that passes a busy peer by sends it
// nothing, and its next batch carries every unit charged meanwhile, though
// the Syncs in between cleared the changed set and its Retry is not due.
func TestSyncReadyCatchesUp(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	st := newStores(t, 3, 0.5, 0) // e = 16
	first := st[0].Sync(t0)       // the first batch is a retry: start after it
	require.NotNil(t, first[1])
	ready := []bool{false, true, false} // region 2's link is still carrying an exchange
	now := t0 + int64(10*time.Millisecond)
	require.True(t, st[0].Decide([]byte("a"), lim, now, 3, false).Allowed)
	bs := st[0].SyncReady(now, ready)
	assert.Nil(t, bs[2], "region 2 was busy")
	require.NotNil(t, bs[1])
	assert.Len(t, bs[1].Entries, 1)
	now += int64(10 * time.Millisecond)
	require.True(t, st[0].Decide([]byte("b"), lim, now, 2, false).Allowed)
	bs = st[0].SyncReady(now, ready)
	assert.Nil(t, bs[2])
	now += int64(10 * time.Millisecond)
	bs = st[0].SyncReady(now, nil)
	require.NotNil(t, bs[2])
	got := map[string]int64{}
	for _, e := range bs[2].Entries {
		got[e.Key] += e.Count
	}
	assert.Equal(t, map[string]int64{"a": 3, "b": 2}, got, "region 2's batch after its link was free")
	st[0].Acked(st[2].Receive(bs[2], now), now)
	assert.Equal(t, int64(3), st[2].Decide([]byte("a"), lim, now, 1, true).Others, "region 2 counts a's units")
}
