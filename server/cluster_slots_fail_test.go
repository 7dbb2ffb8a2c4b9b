package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotsFailCountsAnImportNobodyServes: CLUSTER INFO's
// cluster_slots_fail counts a slot this node imports from an old owner
// that does not serve it either: a's table gives the slot to b, so a
// answers b's requests for it HANDEDOFF, and b's client gets TRYAGAIN
// (a forwarding node, -CLUSTERDOWN) until the import ends. It is the
// shape of a cold start's table of a moment (docs/cluster.md, "Three
// nodes on one machine"): before, every node said cluster_slots_fail:0
// meanwhile. cluster_state stays ok, as Redis's does with
// cluster-require-full-coverage no: b serves every other slot.
func TestSlotsFailCountsAnImportNobodyServes(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, b, "unserved:")
	cb := clients(t, b)[0]
	require.Equal(t, "0", redisClusterInfo(t, cb)["cluster_slots_fail"])
	from, _ := a.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: from, Until: time.Now().Add(time.Minute)}))

	err := cb.Do(context.Background(), "RL.SLIDE", key, 5, 3600).Err()
	require.Error(t, err, "nobody serves the slot")
	assert.True(t, strings.HasPrefix(err.Error(), "TRYAGAIN"), "%v, want TRYAGAIN", err)
	info := redisClusterInfo(t, cb)
	assert.Equal(t, "1", info["cluster_slots_fail"], "the import a refused")
	assert.Equal(t, "ok", info["cluster_state"])

	b.srv.ho.Probe().Set(slot, nil)
	b.srv.ho.Probe().Notify()
	assert.Equal(t, int64(1), slide5(t, cb, key))
	assert.Equal(t, "0", redisClusterInfo(t, cb)["cluster_slots_fail"], "served again")
}
