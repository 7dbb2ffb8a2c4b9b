package handoff

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// TestNeverCutSlotBackKeepsItsKeys: a node handing a slot to o, which
// never took it (the migration is still copying), gets the slot back at
// o's confirmed death: it served the slot all along, so the slot is not
// lost (it holds none of o's copies from a full sync) and the copies it
// holds of o's, older than its store, are not promoted over its keys. The
// simulation's seed 527 at a 1 s import wait: n3 imported slot 11822 from
// n1 by a live handoff while n1's shipments brought copies (87), served it
// to 103, began handing it back to n1, cut off since, and at n1's death
// promoted the 87. Before, the promote replaced the keys, and the slot was
// lost as well.
func TestNeverCutSlotBackKeepsItsKeys(t *testing.T) {
	with := viewOf(t, 2, []string{"x", "b", "o"})
	without := viewOf(t, 3, []string{"x", "b"}, "o")
	key := keyWhere(t, "nevercut", "a key of a slot o owns with o, and x without", func(s int) bool {
		return with.Table.Owner(s).Name == "o" && without.Table.Owner(s).Name == "x"
	})
	slot := cluster.Slot(key)
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 1, []string{"x", "b"}))
	lease := cluster.NewLease("x", time.Hour)
	lease.SentAt(lease.Now(), []string{"x"})
	n := buildNode(t, &cur, &slowImports{wait: time.Hour}, lease, true) // a handoff out stays copying
	n.ho.set(slot, nil)                                                 // served here (the first view's import is a joiner's)

	now := time.Now()
	p := window.Params{Kind: window.KindFixed, Limit: 200, Period: time.Hour}
	entry := func(count uint64) shard.Entry {
		return shard.Entry{Key: key, Params: p, State: window.State{uint64(now.UnixNano()), count}}
	}
	require.NoError(t, n.store.Import(entry(103), now.UnixNano()))
	require.NoError(t, n.repl.Copies().Import(entry(87), now.UnixNano())) // o's shipment while it handed the slot here

	cur.Store(with)
	n.View()
	st := n.State(slot)
	require.NotNil(t, st, "x hands the slot to o")
	require.Equal(t, ModeCopying, st.Mode(), "o never takes it")

	cur.Store(without)
	n.View()
	assert.False(t, n.Takeover().Lost(slot), "served here all along: not lost though x holds none of o's synced copies")
	info, ok := n.store.Get(key, now.UnixNano())
	require.True(t, ok)
	assert.Equal(t, int64(103), info.Count, "o's older copy is not promoted over the keys served since")
}
