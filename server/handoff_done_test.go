package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDoneOnlyFromTheImportsOldOwner: a DONE from a node that the import
// is not from does not end it. A node paused past its lease answered, at
// its resume, a PULL from before its pause with its copies and a DONE,
// which ended the asker's import from the node that served the slot, and
// both served it (simulation seed 1379; path E, a resumed node's handoff,
// is the same turn). Before, takeSlots checked only that the table names
// this node.
func TestDoneOnlyFromTheImportsOldOwner(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, b, "done:")
	from, _ := a.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: from, Until: time.Now().Add(time.Hour)}))
	_, err := b.srv.ho.Probe().TakeSlots(nodes[2].name, []int{slot})
	assert.Equal(t, "ERR slot "+strconv.Itoa(slot)+" is imported from "+a.name+" here", err)
	require.NotNil(t, b.srv.ho.State(slot), "the import waits on")
	assert.Equal(t, handoff.ModeImporting, b.srv.ho.State(slot).Mode())

	// A PULL's answer (copies, then DONE) covers many slots: it skips
	// this one, and takes the rest.
	_, other := keyOwnedBy(t, nodes, b, "done-other:")
	c, _ := b.ml.View().Table.Node(nodes[2].name)
	b.srv.ho.Probe().Set(other, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: c, Until: time.Now().Add(time.Hour)}))
	b.srv.ho.Probe().NotePulled(nodes[2].name, []int{slot, other}, true)
	_, err = b.srv.ho.Probe().TakeSlots(nodes[2].name, []int{slot, other})
	assert.Empty(t, err)
	require.NotNil(t, b.srv.ho.State(slot), "imported from a: the PULL's answer skips it")
	assert.Nil(t, b.srv.ho.State(other), "imported from the answering node: taken")

	_, err = b.srv.ho.Probe().TakeSlots(a.name, []int{slot})
	assert.Empty(t, err, "its old owner ends it")
	assert.Nil(t, b.srv.ho.State(slot))
	assert.Equal(t, int64(1), slide5(t, clients(t, b)[0], key))
}

// TestNoLeaseHandsNothingOver: a node that does not hold its lease sends
// no copies for a PULL and releases no slot: it knows nothing newer than
// its table, and another node may have taken its slots over meanwhile.
func TestNoLeaseHandsNothingOver(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	a := nodes[0]
	_, slot := keyOwnedBy(t, nodes, nodes[1], "nolease:")
	_, backed := a.srv.ho.Probe().BackedUpFor(nodes[1].name, []int{slot})
	ru, _ := a.ml.View().Table.RunnerUp(slot)
	if ru.Name == a.name {
		require.Equal(t, []int{slot}, backed, "with its lease, a backup answers")
	}
	for _, n := range nodes[1:] {
		n.ml.Kill()
		_ = n.srv.Close()
	}
	require.Eventually(t, func() bool { return !a.srv.ho.Serving() }, deadline, time.Millisecond, "one of three holds no lease")
	var all []int
	for s := range 16384 {
		all = append(all, s)
	}
	_, backed = a.srv.ho.Probe().BackedUpFor(nodes[1].name, all)
	assert.Empty(t, backed)
}
