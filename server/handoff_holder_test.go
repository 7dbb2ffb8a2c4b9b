package server

import (
	"context"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReleasedPointsAtTheHolder: an import's old owner that handed the
// slot to a third node does not say it released the slot: it names the
// node it handed it to, and the importer imports the slot from that node,
// which then hands it over. Before, the old owner (its table naming the
// importer) released it, and the importer served the slot from nothing
// while the third node held its keys (TestRedPausedAtHeal: n4 handed the
// slots to n2 during the split; after the heal n1 imported them from n4,
// which released them, and served them from nothing: 40 of 20).
func TestReleasedPointsAtTheHolder(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	a, b, c := nodes[0], nodes[1], nodes[2]
	key, slot := keyOwnedBy(t, nodes, b, "holder:")
	cs := clients(t, a, b, c)
	for range 5 {
		require.Equal(t, int64(1), slide5(t, cs[1], key))
	}
	// c holds the slot's state (a handed it to c, by a table of its own),
	// and b imports the slot from a.
	moveSlotKeys(t, b, c, slot)
	a.srv.ho.Probe().NoteHolder(c.name, []int{slot})
	an, _ := b.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: an, Until: time.Now().Add(-time.Millisecond)}))
	b.srv.ho.Probe().ExpireImports()
	require.Eventually(t, func() bool {
		st := b.srv.ho.State(slot)
		return st != nil && st.Peer().Name == c.name
	}, deadline, time.Millisecond, "a names c, which holds the slot: b imports it from c")
	assert.Zero(t, b.srv.ho.Stats().ImportTimeouts, "not served from what came")

	// c hands the slot over: b serves c's keys.
	bn, _ := c.ml.View().Table.Node(b.name)
	_, _, err := c.srv.ho.Probe().CopyFrom(c.srv.cfg.Store, bn, []int{slot}, true, "reset")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.srv.ho.State(slot) == nil }, deadline, time.Millisecond)
	assertAtLimit(t, cs, []string{key}, "served from c's keys, not from nothing")
}

// TestImportFromDeadHolderIsLost: a slot this node imports from a member
// whose death is confirmed, and of which it holds none of that member's
// copies, is lost, as a slot gained from a dead owner is: no member this
// node sees holds its state. Before, it was served from what came after
// the takeover's wait (the simulation's seeds 162 and 326).
func TestImportFromDeadHolderIsLost(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{replicas: true})
	a, b := nodes[0], nodes[1]
	_, slot := keyOwnedBy(t, nodes, b, "deadholder:")
	an, _ := b.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: an, Until: time.Now().Add(time.Hour)}))
	cn := b.srv
	nv := *cn.ho.View()
	nv.Gone = append(nv.Gone, cluster.Member{Node: an, State: cluster.StateDead})
	cn.ho.Probe().WaitImportsFromDead(&nv)
	require.False(t, cn.repl.HeldBy(slot, a.name), "b holds no copies of a's for the slot")
	assert.True(t, cn.ho.Takeover().Lost(slot), "the slot's state died with a: lost")

	// a comes back (the table keeps giving the slot to b): b imports the
	// slot from it again, which hands it over or releases it.
	b.srv.ho.Probe().Set(slot, nil) // the hook's slotChange ended the import from a
	cn.ho.Probe().LostComeBack(cn.ho.View())
	assert.False(t, cn.ho.Takeover().Lost(slot), "a is back")
	st := b.srv.ho.State(slot)
	require.NotNil(t, st)
	assert.Equal(t, a.name, st.Peer().Name, "imported from a again")
	assert.False(t, st.Until().After(time.Now()), "asks a at once whether it released the slot, not after importWait")
	require.Eventually(t, func() bool { return b.srv.ho.State(slot) == nil && cn.ho.Probe().HolderOf(slot) == "" }, deadline, time.Millisecond,
		"a, which never held the slot, released it: served here")

	// Lost again. A third node's PULL answer (a backup's copies) is not the
	// holder's state: refused, the slot stays lost. (A live handoff's DONE
	// from a third node, which served the slot, ends the loss:
	// TestHandoffEndsALossWhateverItsHolder.) a's DONE (its handback) ends
	// the loss: the state came.
	b.srv.ho.Probe().Set(slot, nil)
	cn.ho.Probe().FromDead([]int{slot}, a.name)
	require.True(t, cn.ho.Takeover().Lost(slot))
	b.srv.ho.Probe().NotePulled(nodes[2].name, []int{slot}, true)
	_, errReply := b.srv.ho.Probe().TakeSlots(nodes[2].name, []int{slot})
	assert.Contains(t, errReply, "TRYAGAIN", "a third node's PULL answer is refused")
	assert.True(t, cn.ho.Takeover().Lost(slot), "a third node's PULL answer is not the holder's state")
	_, errReply = b.srv.ho.Probe().TakeSlots(a.name, []int{slot})
	require.Empty(t, errReply)
	assert.False(t, cn.ho.Takeover().Lost(slot), "a handed the slot over")
}

// TestTakeoverFromCopiesBeatsAHolder: a node that gains a slot from a dead
// owner whose copies of it it holds takes the slot over from them, even if
// it has a record of another node holding it: the owner shipped them
// after any such record. Before, it imported the slot from the recorded
// node, which named the dead owner (it had handed the slot to it), and by
// then the copies were promoted and no longer counted as held: the slot
// was lost while this node had its state (TestPausedOwnerAnswersNothingStale/30s
// in CI, 3114 slots).
func TestTakeoverFromCopiesBeatsAHolder(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{replicas: true})
	a, b, c := nodes[0], nodes[1], nodes[2]
	var key string
	var slot int
	for _, k := range testKeys("held:", 1000) {
		if owner, backup := backupOf(nodes, a, k); owner == b && backup == c {
			key, slot = k, cluster.Slot([]byte(k))
			break
		}
	}
	require.NotEmpty(t, key, "a key of b's that c backs up")
	ca := newClient(t, a.addr, 2)
	useUp(t, ca, key)
	require.Eventually(t, func() bool {
		return sameEntry(b.store, c.copies, key) && c.srv.repl.HeldBy(slot, b.name)
	}, deadline, 5*time.Millisecond, "c holds b's copy of the key, from b's full sync")
	a.srv.ho.Probe().NoteHolder(b.name, []int{slot}) // a handed the slot to b (its join)
	c.srv.ho.Probe().NoteHolder(a.name, []int{slot}) // c's record of another node holding it (its join's guess, say)

	b.ml.Kill()
	_ = b.srv.Close()
	waitOwners(t, []*testNode{a, c}, 2)
	cn := c.srv
	if st := cn.ho.State(slot); st != nil {
		assert.NotEqual(t, handoff.ModeImporting, st.SlotMode(), "taken over from b's copies, not imported from %s", st.Peer().Name)
	}
	require.Eventually(t, func() bool {
		rep, err := ca.Do(context.Background(), "RL.SLIDE", key, 5, 3600).Int64Slice()
		return err == nil && rep[0] == 0
	}, deadline, 10*time.Millisecond, "c serves the key from b's copies, at its limit")
	assert.False(t, cn.ho.Takeover().Lost(slot), "not lost: c holds its state")
}

// TestAskChainIsBounded: an import re-pointed by its old owners' ASKs
// follows at most as many as the table has members: records that point
// round in a circle (a names c, c names a) leave it waiting on the last
// node named, asking it again each second, rather than hopping between
// them for good.
func TestAskChainIsBounded(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	a, b, c := nodes[0], nodes[1], nodes[2]
	_, slot := keyOwnedBy(t, nodes, b, "circle:")
	a.srv.ho.Probe().NoteHolder(c.name, []int{slot})
	c.srv.ho.Probe().NoteHolder(a.name, []int{slot})
	an, _ := b.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: an, Until: time.Now().Add(time.Hour)}))
	for range 10 { // each the answer the old owner gives, as a round of RELEASED would
		st := b.srv.ho.State(slot)
		require.NotNil(t, st)
		next := c.name
		if st.Peer().Name == c.name {
			next = a.name
		}
		b.srv.ho.Probe().AskElsewhere(st, next, []int{slot})
	}
	st := b.srv.ho.State(slot)
	require.NotNil(t, st, "never served: nobody handed it over")
	assert.Equal(t, handoff.ModeImporting, st.SlotMode())
	assert.Equal(t, 3, st.Asks(), "as many ASKs as members, then no more")
}
