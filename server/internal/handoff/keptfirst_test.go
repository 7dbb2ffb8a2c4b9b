package handoff

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKeptSlotNamesNoOtherNode: a node asked RL.PEER RELEASED for a slot
// whose keys it keeps for the asker answers nothing for it, though its
// table gave the slot to the asker because the slot's owner died
// (deadPrev): its kept keys are the slot's newest state (keptFirst). The
// simulation's seed 5765 at a 1 s import wait: n2 answered n3 "ASK n0", n0
// released the slot, and n3 served it from 0 while n2 kept 62 for it.
func TestKeptSlotNamesNoOtherNode(t *testing.T) {
	n, slot := afterDeadOwner(t)
	n.switchMu.Lock()
	n.ho.keep(slot) // x kept its keys for r
	n.switchMu.Unlock()
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "x keeps the slot's keys for r: neither released nor ASK d")
}
