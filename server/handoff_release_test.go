package server

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportWaitsForAnOwnerThatHolds: an import that has waited importWait
// is not served from what came while its old owner still holds the slot
// (a copy to a third node stuck for 5 s, or a table of its own at a
// partition's heal: the 3/2 heal's over-admission). Before, node b served
// the slot from its empty state once the wait ran out, and a key used up
// on a admitted its limit again through b.
func TestImportWaitsForAnOwnerThatHolds(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, a, "held:")
	cs := clients(t, a, b)
	for range 5 {
		require.Equal(t, int64(1), slide5(t, cs[0], key))
	}
	from, _ := a.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: from, Until: time.Now().Add(-time.Millisecond)}))
	b.srv.ho.Probe().ExpireImports()
	assertAtLimit(t, cs, []string{key}, "served by a, which holds the slot")
	require.Eventually(t, func() bool {
		st := b.srv.ho.State(slot)
		return st == nil || time.Now().After(st.Until()) // asked once, and waited releaseRetry
	}, deadline, time.Millisecond)
	require.NotNil(t, b.srv.ho.State(slot), "a holds the slot: b waits on")
	assert.Equal(t, handoff.ModeImporting, b.srv.ho.State(slot).Mode())
	assertAtLimit(t, cs, []string{key}, "still served by a")
	assert.Zero(t, b.srv.ho.Stats().ImportTimeouts)
}

// TestImportReleasedServedFromWhatCame: an import whose old owner's table
// gives the slot to the importer, and which hands nothing over (a guessed
// old owner that never held the slot, or a DONE lost on the way), is
// served from what came once the old owner says it released it.
func TestImportReleasedServedFromWhatCame(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, b, "released:")
	from, _ := a.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: from, Until: time.Now().Add(-time.Millisecond)}))
	b.srv.ho.Probe().ExpireImports()
	require.Eventually(t, func() bool { return b.srv.ho.State(slot) == nil }, deadline, time.Millisecond,
		"a's table names b: released, b serves the slot")
	assert.Equal(t, int64(1), b.srv.ho.Stats().ImportTimeouts)
	assert.Equal(t, int64(1), slide5(t, clients(t, b)[0], key))
}
