package handoff

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRejoinServesNoLostSlotFromItsKeys: a node whose slot is lost when it
// rejoins (the slot's old owner died, and the node holds none of its
// copies) never held the slot's state, so when its lease proves the death
// unconfirmed it does not serve that slot from its keys, whether the
// rejoin's import still waits or an ASK naming the dead holder lost it
// again (rejoinLost). The simulation's seed 3122 at a 1 s import wait: n2
// served 11822 from 0 that way while n1, paused, held 16. Before, the ASK
// marked the slot as the rejoin's own lost one, and the proof served it.
func TestRejoinServesNoLostSlotFromItsKeys(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "r", "h"})
	v2 := viewOf(t, 2, []string{"x", "r"}, "h")
	slot := slotWhere(t, "a slot h owned that x owns once h died", func(slot int) bool {
		return v1.Table.Owner(slot).Name == "h" && v2.Table.Owner(slot).Name == "x"
	})
	for _, asked := range []bool{false, true} {
		n, cur := leasedNode(t, v1, &recorder{}, true)
		n.ho.set(slot, nil) // the first view's import is a joiner's
		cur.Store(v2)
		n.View()
		require.True(t, n.Takeover().Lost(slot), "h died holding it, and x holds none of h's copies: lost")
		n.rejoin()
		if asked {
			st := n.State(slot)
			require.True(t, st != nil && st.Mode() == ModeImporting, "the rejoin asks for it")
			n.askElsewhere(st, "h", []int{slot}) // a third node names h, dead
			n.switchMu.Lock()
			own := n.ho.ownLost.Has(slot)
			n.switchMu.Unlock()
			assert.False(t, own, "lost before the rejoin: not the rejoin's own lost slot")
		}
		n.rejoinUnconfirmed()
		assert.True(t, n.Takeover().Lost(slot), "asked %v: still lost, h holds its state, not x's keys", asked)
		if !asked {
			st := n.State(slot)
			assert.True(t, st != nil && st.Mode() == ModeImporting, "its import still waits")
		}
	}
}
