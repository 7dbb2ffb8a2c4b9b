package server

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandoffWaitsForLateDone: a new owner whose old owner has cut the
// slot, but whose DONE has not arrived, keeps waiting for it across
// several HANDEDOFF answers instead of answering TRYAGAIN after the first
// wait: on a busy host DONE can take longer than one wait, and a plain
// client does not retry TRYAGAIN.
func TestHandoffWaitsForLateDone(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, a, "late:")
	cb := clients(t, b)[0]
	from, _ := a.ml.View().Table.Node(a.name)
	to, _ := a.ml.View().Table.Node(b.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: from, Until: time.Now().Add(time.Hour)}))
	a.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeMoved, Peer: to})) // a has cut: it answers b HANDEDOFF
	reply := slide5Async(cb, key)
	require.Eventually(t, func() bool { return b.srv.ho.Stats().CrossedCut >= 2 },
		deadline, time.Millisecond, "b sends the request to a again after a second HANDEDOFF")
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeAdopted, Peer: from})) // DONE arrives
	b.srv.ho.Probe().Notify()
	assert.Equal(t, int64(1), slideAnswer(t, reply), "served by b once DONE came")
}
