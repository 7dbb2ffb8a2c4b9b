package handoff

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdoptedSlotNamesNoOtherNode: a node asked RL.PEER RELEASED for a
// slot it adopted (handed here by the asker ahead of this node's table)
// answers nothing for it, though its table gave the slot to the asker
// because the slot's owner died (deadPrev): its keys are here, not with
// that dead owner (heldFirst). The simulation's cold seed 1181 at a 1 s
// import wait, on a model with the server's got: n1 answered n4's
// RELEASED "ASK n2", n2 released the slot, and n4 served it from 0 while
// n1 held 140. Before, the node answered "ASK" the dead owner.
func TestAdoptedSlotNamesNoOtherNode(t *testing.T) {
	n, slot := afterDeadOwner(t)
	r, ok := n.View().Table.Node("r")
	require.True(t, ok)
	n.switchMu.Lock()
	n.ho.set(slot, &SlotState{mode: ModeAdopted, peer: r}) // r handed it here
	n.switchMu.Unlock()
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "x holds the slot's keys: neither released nor ASK d")
}
