package server

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeptKeysReachTheOwner: a node waiting for a slot to be handed back
// after a rejoin (an import that keeps its keys), whose table then gives
// the slot to a third node, sends that node its keys for the slot; the
// third node, whose guess at the slot's old owner never held it and
// releases it, serves the slot from those keys. Before, the rejoin's
// import was dropped and nothing sent, and the key, used up, admitted its
// whole limit again (safered4's TestRedPausedAtHeal: n0 held the slot and
// kept it while rejoining, n2's death moved it to n3, and n0 released it).
func TestKeptKeysReachTheOwner(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	a, b, c := nodes[0], nodes[1], nodes[2]
	key, slot := keyOwnedBy(t, nodes, c, "kept:")
	cs := clients(t, a, b, c)
	for range 5 {
		require.Equal(t, int64(1), slide5(t, cs[2], key))
	}
	// The slot's state is b's: c's keys move there, and c imports the
	// slot from a, which never held it.
	moveSlotKeys(t, c, b, slot)
	from, _ := a.ml.View().Table.Node(a.name)
	c.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: from, Until: time.Now().Add(time.Hour)}))
	// b waits for the slot as after a rejoin; its table gives it to c.
	ru, _ := b.ml.View().Table.Node(b.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: ru, Until: time.Now().Add(time.Hour), Keep: true}))
	v := b.srv.ho.View()
	b.srv.ho.Probe().Hook(v, v)
	assert.Nil(t, b.srv.ho.State(slot), "c owns the slot now")

	require.Eventually(t, func() bool { return hasKey(c.srv.cfg.Store, key) }, deadline, time.Millisecond,
		"b sends c the keys it kept")
	require.NotNil(t, c.srv.ho.State(slot), "c imports the slot from a, not b: b's DONE does not end it")
	assert.Eventually(t, func() bool { return !hasKey(b.srv.cfg.Store, key) }, deadline, time.Millisecond,
		"b drops them once c has them")

	c.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: from, Until: time.Now().Add(-time.Millisecond)}))
	c.srv.ho.Probe().ExpireImports()
	require.Eventually(t, func() bool { return c.srv.ho.State(slot) == nil }, deadline, time.Millisecond,
		"a released the slot: c serves it from what came")
	assertAtLimit(t, cs, []string{key}, "served from b's keys, not from nothing")
}

// TestKeptSlotNotReleased: a node that keeps a slot's keys for its owner
// does not say it released the slot, so that the owner does not serve it
// from what came before the keys arrive; when the owner imports the slot
// from that node, the keys' DONE ends the import.
func TestKeptSlotNotReleased(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	b, c := nodes[1], nodes[2]
	key, slot := keyOwnedBy(t, nodes, c, "keptrel:")
	cs := clients(t, nodes...)
	for range 5 {
		require.Equal(t, int64(1), slide5(t, cs[2], key))
	}
	moveSlotKeys(t, c, b, slot)
	bn, _ := c.ml.View().Table.Node(b.name)
	c.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: bn, Until: time.Now().Add(time.Hour)}))
	b.srv.ho.Probe().Pushing(true) // as if a push waited for the lease
	b.srv.ho.Probe().Keep(slot)
	rel, _, err := c.srv.ho.Probe().Released(bn, []int{slot})
	require.NoError(t, err)
	assert.Empty(t, rel, "b keeps the slot's keys: not released")

	b.srv.ho.Probe().Pushing(false)
	b.srv.ho.Probe().PushKept()
	require.Eventually(t, func() bool { return c.srv.ho.State(slot) == nil }, deadline, time.Millisecond,
		"c imports the slot from b: b's DONE ends the import")
	assertAtLimit(t, cs, []string{key}, "served from b's keys")
}

// moveSlotKeys moves from's keys of slot into to's store.
func moveSlotKeys(t *testing.T, from, to *testNode, slot int) {
	t.Helper()
	in := func(key []byte) bool { return cluster.Slot(policy.Route(key)) == slot }
	m := from.srv.cfg.Store
	var es []shard.Entry
	for i := range m.Shards() {
		es = m.ExportShardFunc(i, in, es)
	}
	require.NotEmpty(t, es)
	now := time.Now().UnixNano()
	for _, e := range es {
		e.Route = handoff.RouteOf(e.Key)
		require.NoError(t, to.srv.cfg.Store.Import(e, now))
	}
	from.srv.ho.Probe().DropSlots([]int{slot})
}

// hasKey reports whether m holds key.
func hasKey(m *shard.Map, key string) bool {
	_, ok := m.Lookup([]byte(key), handoff.RouteOf([]byte(key)))
	return ok
}
