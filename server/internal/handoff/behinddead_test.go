package handoff

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestKeptBehindADeadPeer: a rejoin's import of a slot from the node that
// took it over at its death (p), which the table moves on to a third node
// (o) in the very change that says p died, keeps its keys and sends them
// to o without a DONE, naming p the slot's holder: o's RELEASED is
// answered "ASK p", and o, without p in its table, has the slot lost until
// p is back (keptBehind). The simulation's cold seed 863: n1's kept 41 of
// slot 11822 ended n2's import with their DONE while n3, paused past its
// confirmed death, held 53. Before, the DONE went, as when p lives.
// Once the table moves the slot off o, o is the holder, as after a DONE
// (forgetBehindDead): the simulation's seed 407, with p kept the holder,
// x imported the slot from p, which had never served it, where o had.
func TestKeptBehindADeadPeer(t *testing.T) {
	xop := viewOf(t, 1, []string{"x", "o", "p"})
	xp := viewOf(t, 2, []string{"x", "p"}, "o")
	xo := viewOf(t, 3, []string{"x", "o"}, "p")   // o back, p dead: the slot goes to o
	back := viewOf(t, 4, []string{"x", "p"}, "o") // p back, o dead: the slot comes back to x
	var key []byte
	for i := 0; key == nil; i++ {
		k := []byte("behind" + strconv.Itoa(i))
		if s := cluster.Slot(k); xp.Table.Owner(s).Name == "x" && xo.Table.Owner(s).Name == "o" && back.Table.Owner(s).Name == "x" {
			key = k
		}
	}
	slot := cluster.Slot(key)
	n, fw, cur := movedNode(t, xop, xp)
	now := time.Now()
	p, _ := xp.Table.Node("p")
	holdKey(t, n, key, 41, now)
	awaitHandback(n, slot, p) // a rejoin's wait for p's handback
	cur.Store(xo)
	n.View()
	require.Eventually(t, func() bool { return !n.keeps(slot) && !n.pushing.Load() }, 5*time.Second, time.Millisecond, "the kept keys go to o")
	assert.Contains(t, fw.commands(), cluster.PeerImport+" handback")
	assert.NotContains(t, fw.commands(), cluster.PeerDone+" "+strconv.Itoa(slot), "no DONE: p, dead, held newer keys")
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" p "+strconv.Itoa(slot), releasedTo(n, "o", slot), "ASK p")

	cur.Store(back)
	n.View()
	st := n.State(slot)
	assert.False(t, st != nil && st.Mode() == ModeImporting && st.peer.Name == "p", "x does not import the slot from p")
	assert.NotEqual(t, "p", n.holderOf(slot), "o, which took the keys, held the slot last: not p")
}
