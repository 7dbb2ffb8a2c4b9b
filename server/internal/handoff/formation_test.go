package handoff

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
)

// TestImportDown: an import counts as down (CLUSTER INFO's
// cluster_slots_fail) once its old owner refused a request for it, once
// it has waited the import wait and asks RL.PEER RELEASED, or once an ASK
// sent it on; a live handoff's import, whose old owner serves the slot
// while it copies it, does not, nor does a migration.
func TestImportDown(t *testing.T) {
	n := &Node{}
	peer := cluster.Node{Name: "a"}
	until := time.Now().Add(importWait)
	live := &SlotState{mode: ModeImporting, peer: peer, until: until}
	refused := &SlotState{mode: ModeImporting, peer: peer, until: until}
	n.ImportRefused(refused)
	states := map[int]*SlotState{
		1: live,
		2: refused,
		3: {mode: ModeImporting, peer: peer, until: until, waited: true},
		4: {mode: ModeImporting, peer: peer, until: until, past: []string{"b"}},
		5: {mode: ModeCopying, peer: peer, mg: &Migration{}},
	}
	for slot, st := range states {
		n.ho.set(slot, st)
	}
	n.ImportRefused(states[5]) // a migration is not an import: no mark
	got := map[int]bool{}
	for slot := range states {
		got[slot] = n.ImportDown(slot)
	}
	assert.Equal(t, map[int]bool{1: false, 2: true, 3: true, 4: true, 5: false}, got)
	assert.False(t, n.ImportDown(6), "a slot that follows the table")
}
