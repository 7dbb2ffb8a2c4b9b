package handoff

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// TestFullSyncWaitsForTheSwitch: a full sync's drop that lands while this
// node switches to a view in which the syncing owner died waits for the
// switch's hooks. Between noteLost, which finds the slot's copies held
// (so the slot is not lost), and the replicas' promote, which moves them
// into the store, it emptied the copies: the slot was taken over from
// nothing, and handed back in mode replace over the owner's newer keys.
// CI's TestSplitTwoOfFive on b95d518: at the heal, q5-0 (majority) full
// synced its backups q5-1 and q5-2 (its table had grown back to five)
// just as the minority's death verdict on it, gossiped at the heal, made
// them confirm its death; both promoted keys=0, and three counting keys
// went from about 200 to 0 (docs/cluster.md, "Safety").
func TestFullSyncWaitsForTheSwitch(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "o", "p"})
	v2 := viewOf(t, 2, []string{"x", "p"}, "o")
	key := string(keyWhere(t, "heal:", "a slot o owns with x its backup, and x without o", func(s int) bool {
		ru, ok := v1.Table.RunnerUp(s)
		return ok && v1.Table.Owner(s).Name == "o" && ru.Name == "x" && v2.Table.Owner(s).Name == "x"
	}))
	slot := cluster.Slot(policy.Route([]byte(key)))
	var cur atomic.Pointer[cluster.View]
	cur.Store(v1)
	n := buildNode(t, &cur, &recorder{}, cluster.NewLease("x", time.Second), true)

	bits := make([]byte, cluster.Slots/8)
	bits[slot/8] |= 1 << (slot % 8)
	sync := func() string { // o's full sync: drop its slot's copies, back it up here, ended by SYNCED
		w := &nopWriter{}
		var st replica.Stream
		n.Replicator().PeerSync(w, &st, "o", [][]byte{bits, bits, []byte(cluster.PeerSyncEnds)})
		n.Replicator().PeerSynced(w, &st)
		return w.last
	}
	require.Equal(t, "+OK", sync())
	scratch, err := shard.New(shard.Config{})
	require.NoError(t, err)
	_, err = scratch.Decide([]byte(key), window.Params{Kind: window.KindSlide, Limit: 1000, Period: time.Hour}, time.Now().UnixNano(), 200, false)
	require.NoError(t, err)
	e, ok := scratch.Lookup([]byte(key), policy.Route([]byte(key)))
	require.True(t, ok)
	require.NoError(t, n.Replicator().Copies().Import(e, time.Now().UnixNano()))
	require.True(t, n.Replicator().HeldBy(slot, "o"), "o's copy of the slot, held")

	// o syncs x again (its table changed at a heal) while x switches to
	// the view in which o died: the SYNC comes between the hooks.
	done := make(chan string, 1)
	n.switchMu.Lock()
	n.hooks = append([]Hook{n.hooks[0], func(_, _ *cluster.View) {
		go func() { done <- sync() }()
		select {
		case <-done:
			done <- "+OK"
		case <-time.After(100 * time.Millisecond): // it waits for the switch
		}
	}}, n.hooks[1:]...)
	n.switchMu.Unlock()
	cur.Store(v2)
	n.View()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		require.Fail(t, "o's SYNC never ended")
	}

	got, inStore := n.store.Lookup([]byte(key), policy.Route([]byte(key)))
	lost := n.Takeover().Lost(slot)
	assert.True(t, inStore || lost, "x took o's slot over from neither its copy nor as lost: it serves it from nothing")
	if inStore {
		assert.Equal(t, e.Params, got.Params, "the promoted copy is o's")
	}
}
