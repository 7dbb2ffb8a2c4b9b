package server

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotsFailCountsAGuessImport: CLUSTER INFO's cluster_slots_fail
// counts a slot this node imports from a guess as soon as the import
// starts, before any request: the guess is the slot's runner-up, whose
// table names this node the owner, so nobody serves the slot until the
// guess's PULL answer ends the import. In a cold start's rarer wait (a
// PULL that reached its guess before the guess held its lease) every
// node said cluster_slots_fail:0 for the import wait's 5 s while clients
// got TRYAGAIN and -CLUSTERDOWN (CI at 844c1a4): no request had been
// refused, and the import had not waited yet.
func TestSlotsFailCountsAGuessImport(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, b, "guessed:")
	cb := clients(t, b)[0]
	require.Equal(t, "0", redisClusterInfo(t, cb)["cluster_slots_fail"])
	guess, _ := a.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: guess, Until: time.Now().Add(time.Minute), Guess: true}))

	info := redisClusterInfo(t, cb)
	assert.Equal(t, "1", info["cluster_slots_fail"], "an import from a guess, before any request")
	assert.Equal(t, "ok", info["cluster_state"], "the other slots serve")

	b.srv.ho.Probe().Set(slot, nil)
	b.srv.ho.Probe().Notify()
	assert.Equal(t, int64(1), slide5(t, cb, key))
	assert.Equal(t, "0", redisClusterInfo(t, cb)["cluster_slots_fail"], "served")
}
