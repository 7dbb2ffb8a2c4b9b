package handoff

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestImportFromATakeoverNamesTheDeadOwner: x's table gave p a slot at its
// owner d's death, then moved it to x, which imports it from p, holding
// none of p's copies; when the next table gives the slot back to p before
// the import ends, x answers p's RELEASED "ASK d", not that it released
// it: x never learned that p took the slot over (takenPrev). The
// simulation's seed 2108 at a 1 s import wait: p's own table had moved
// the slot from d to x at once (p dropped d's copies), and x's release
// let p serve it from 0 while d, paused, held 45.
func TestImportFromATakeoverNamesTheDeadOwner(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "p", "c", "e", "d"})
	v2 := viewOf(t, 2, []string{"x", "p", "c", "e"}, "d")
	v3 := viewOf(t, 3, []string{"x", "p", "e"}, "c")
	v4 := viewOf(t, 4, []string{"x", "p", "c", "e"})
	slot := slotWhere(t, "a slot d owned, p's at d's death, x's without c, p's with c again", func(slot int) bool {
		return v1.Table.Owner(slot).Name == "d" && v2.Table.Owner(slot).Name == "p" &&
			v3.Table.Owner(slot).Name == "x" && v4.Table.Owner(slot).Name == "p"
	})
	n, cur := leasedNode(t, v1, &recorder{}, true)
	for _, v := range []*cluster.View{v2, v3} {
		cur.Store(v)
		n.View()
	}
	st := n.State(slot)
	require.True(t, st != nil && st.Mode() == ModeImporting && st.peer.Name == "p", "x imports the slot from p")
	cur.Store(v4)
	n.View()
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), releasedTo(n, "p", slot),
		"the slot never came here, and p got it at d's death: ASK d")
}
