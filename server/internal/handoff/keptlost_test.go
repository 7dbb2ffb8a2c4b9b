package handoff

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// unreached is a Forwarder that reaches no node (a cut).
type unreached struct{}

func (unreached) Forward(context.Context, string, [][][]byte) ([][]byte, error) {
	return nil, cluster.ErrUnreachable
}

func (unreached) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

// TestKeptSlotLostAgainKeptForTheOwner: x served d's slot after d's
// confirmed death, could not hand it back when d returned (its keys kept
// for d, in mode handback), learned it had been declared dead, and had the
// slot back, lost, at d's next death (x holds none of d's copies). Once d
// is back and owns it again (forgone), x does not release it to d's
// RELEASED KEEP, though d's last death came after x's rejoin: x's keys
// never reached d, so they are newer than d's (keptLost). The simulation's
// cold seed 47 at a 1 s import wait: n1 served n0's slot 5397 to 72 after
// n0's confirmed death and released it to n0's rejoin, which served its 45.
func TestKeptSlotLostAgainKeptForTheOwner(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "c", "d"})
	v2 := viewOf(t, 2, []string{"x", "c"}, "d")
	slot := slotWhere(t, "a slot of d's that d's death gives x", func(slot int) bool {
		return v1.Table.Owner(slot).Name == "d" && v2.Table.Owner(slot).Name == "x"
	})
	n, cur := leasedNode(t, v1, unreached{}, true)
	cur.Store(v2)
	n.View()
	n.takeover.Store(n.takeover.Load().WithLost(&[cluster.Slots / 64]uint64{})) // as if x held d's copies: it took the slot over
	n.ho.set(slot, nil)                                                         // and served it

	cur.Store(viewOf(t, 3, []string{"x", "c", "d"}))
	n.View() // d is back: x hands the slot to d, which it does not reach
	st := n.State(slot)
	require.True(t, st != nil && st.mg != nil, "x hands the slot to d")
	n.rejoin() // and learns it was declared dead: the handoff is disowned, its keys kept for d
	require.Eventually(t, func() bool { return n.keeps(slot) && n.State(slot) == nil && !n.pushing.Load() },
		10*time.Second, time.Millisecond, "x's keys are kept for d")
	n.switchMu.Lock()
	replace := n.ho.keptReplace.Has(slot)
	n.switchMu.Unlock()
	require.True(t, replace, "in mode handback: x saw d's death confirmed")

	cur.Store(viewOf(t, 4, []string{"x", "c"}, "d"))
	n.View()
	require.True(t, n.Takeover().Lost(slot), "d died again, and x holds none of its copies: lost")
	require.False(t, n.keeps(slot), "x's own again")
	cur.Store(viewOf(t, 5, []string{"x", "c", "d"}))
	n.View()
	requireForgone(t, n, slot)

	assert.Equal(t, "+"+releaseNone, releasedKeepTo(n, "d", slot), "x's keys never reached d: not released to d's rejoin")
	assert.True(t, n.keeps(slot), "x's keys are kept for d")
	n.switchMu.Lock()
	replace = n.ho.keptReplace.Has(slot)
	n.switchMu.Unlock()
	assert.True(t, replace, "in mode handback: they replace d's older keys")
}
