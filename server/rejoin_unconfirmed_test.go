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

// TestUnconfirmedRejoinServesOwnKeys: b rejoined (its slots wait for a
// handback from their runner-up c, keeping b's keys), and c's death was
// confirmed while they waited, so one of them is lost: b holds no copies
// of c's. When b's lease proves that no majority confirmed b's death
// (nobody took its slots over), both are served from b's keys at once: the
// lost one at its limit. A slot b imports from a node it handed the slot
// to waits on. Before, the lost slot stayed lost until c came back, and
// then until c, itself back from a confirmed death, could answer
// (TestRedPausedAtHeal: 10 of 30 counting keys -CLUSTERDOWN at the end).
func TestUnconfirmedRejoinServesOwnKeys(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{replicas: true})
	a, b, c := nodes[0], nodes[1], nodes[2]
	var keys []string
	var slots []int
	for _, k := range testKeys("unconfirmed:", 2000) {
		s := cluster.Slot([]byte(k))
		if owner, backup := backupOf(nodes, a, k); owner == b && backup == c && (len(slots) == 0 || slots[0] != s) {
			keys, slots = append(keys, k), append(slots, s)
			if len(keys) == 3 {
				break
			}
		}
	}
	require.Len(t, keys, 3, "three keys of b's that c backs up, in different slots")
	cb := newClient(t, b.addr, 2)
	for _, k := range keys[:2] {
		useUp(t, cb, k)
	}
	cn := b.srv
	pr := cn.ho.Probe()
	importing := func(peer cluster.Node, keep bool) *handoff.SlotState {
		return handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: peer, Until: time.Now().Add(time.Hour), Keep: keep})
	}
	cnode, ok := cn.ho.View().Table.Node(c.name)
	require.True(t, ok)
	anode, _ := cn.ho.View().Table.Node(a.name)
	pr.Set(slots[0], importing(cnode, true)) // the rejoin's
	handed := importing(anode, false)        // b handed it to a: a holds its state
	pr.Set(slots[2], handed)

	// c's death is confirmed while slots[0] waits: lost (the hook's
	// slotChange then ends the import).
	nv := *cn.ho.View()
	nv.Gone = append(nv.Gone, cluster.Member{Node: cnode, State: cluster.StateDead})
	pr.WaitImportsFromDead(&nv)
	pr.Set(slots[0], nil)
	require.False(t, cn.repl.HeldBy(slots[0], c.name))
	require.True(t, cn.ho.Takeover().Lost(slots[0]), "b holds no copies of c's: lost")
	// slots[1] waits for c, alive in this view: not lost. (Set before the
	// death above, it was lost too, and kept its import state, which a
	// lost slot never has: a lost slot's import ends at the table change.)
	pr.Set(slots[1], importing(cnode, true))
	require.False(t, cn.ho.Takeover().Lost(slots[1]))

	pr.RejoinUnconfirmed()
	assert.False(t, cn.ho.Takeover().Lost(slots[0]), "no majority confirmed b's death: its keys are the slot's state")
	assert.Nil(t, cn.ho.State(slots[1]), "the waiting one is served from b's keys too")
	assert.Same(t, handed, cn.ho.State(slots[2]), "an import from the node b handed the slot to waits on")
	for _, k := range keys[:2] {
		require.Eventually(t, func() bool {
			rep, err := cb.Do(context.Background(), "RL.SLIDE", k, 5, 3600).Int64Slice()
			return err == nil && rep[0] == 0
		}, deadline, 10*time.Millisecond, "%s served from b's keys, at its limit", k)
	}
}
