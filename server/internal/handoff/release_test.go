package handoff

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// TestReleasedToTheRejoinItWasLostFrom: a node that lost a slot at its
// owner d's confirmed death (it held none of d's copies), and whose table
// gave the slot back to d when d came back (forgone), releases it to d
// when d's RL.PEER RELEASED says KEEP (a rejoin: d waits for the slot
// keeping its own keys, which are its state, since no one served the slot
// after d stopped: it was lost here). It sends anyone else to d, and releases it
// to no question without KEEP (a restarted d, whose keys died with its
// process). TestRedPausedAtHeal: n2, paused, had every slot it owned lost
// on their runner-ups, whose rejoins at the heal forgot its copies; once
// resumed it asked each of them every second, and each answered it still
// held them: 10 of the 30 counting keys down to the end. Before, a
// forgone slot was never released.
func TestReleasedToTheRejoinItWasLostFrom(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "d", "r"})
	v2 := viewOf(t, 2, []string{"x", "r"}, "d")
	v3 := viewOf(t, 3, []string{"x", "d", "r"})
	slot := slotWhere(t, "a slot of d's that d's death gives x", func(slot int) bool {
		return v1.Table.Owner(slot).Name == "d" && v2.Table.Owner(slot).Name == "x" && v3.Table.Owner(slot).Name == "d"
	})
	n, cur := leasedNode(t, v1, &recorder{}, true)
	cur.Store(v2)
	n.View()
	require.True(t, n.Takeover().Lost(slot), "x holds none of d's copies: lost")
	cur.Store(v3)
	n.View()
	n.switchMu.Lock()
	forgone := n.ho.forgone.Has(slot)
	n.switchMu.Unlock()
	require.True(t, forgone, "d is back and owns it again: forgone here")

	assert.Equal(t, "+"+releaseNone, releasedTo(n, "d", slot), "without KEEP: d may be a new process, whose keys died")
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedKeepTo(n, "d", slot), "d's rejoin keeps its keys, the slot's state: released")
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), releasedKeepTo(n, "r", slot), "anyone else is sent to d")
}

// releasedKeepTo returns n's answer to RL.PEER RELEASED from for slot, KEEP.
func releasedKeepTo(n *Node, from string, slot int) string {
	w := &nopWriter{}
	n.peerReleased(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerReleased), []byte(from),
		[]byte(strconv.Itoa(slot)), []byte(cluster.ReleasedKeep)})
	return w.last
}

// TestLostOwnSlotComesBackWithItsHolder: a rejoining node whose own slot
// waits for a handback from its runner-up r, keeping its keys, has the
// slot lost when r's death is confirmed (it holds none of r's copies),
// and imports it from r, keeping its keys, once r is back: r is the lost
// slot's holder. TestRedMinorityPausedAtHeal: n4, back from the minority
// side, waited for its slots from n1, their runner-up, which was paused;
// n1's death was confirmed, and when n1 resumed n4 answered those slots
// -CLUSTERDOWN to the end (about 5,000 replies): the hook, ending the
// import from the dead n1, had also cleared the holder that brings the
// slot back with n1. Before, it stayed lost until an RL.CLUSTER FORGET.
func TestLostOwnSlotComesBackWithItsHolder(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "r", "d"})
	v2 := viewOf(t, 2, []string{"x", "d"}, "r")
	v3 := viewOf(t, 3, []string{"x", "r", "d"})
	slot := slotWhere(t, "a slot x owns throughout, r its runner-up", func(slot int) bool {
		ru, ok := v1.Table.RunnerUp(slot)
		return ok && ru.Name == "r" && v1.Table.Owner(slot).Name == "x" && v2.Table.Owner(slot).Name == "x"
	})
	n, cur := leasedNode(t, v1, &recorder{}, true)
	n.ho.set(slot, nil) // served here (the first view's import is a joiner's)
	n.rejoin()
	st := n.State(slot)
	require.True(t, st != nil && st.Mode() == ModeImporting && st.keep && st.peer.Name == "r", "the rejoin waits for r, keeping its keys")
	cur.Store(v2)
	n.View()
	require.True(t, n.Takeover().Lost(slot), "r died holding it, and x holds none of r's copies: lost")
	cur.Store(v3)
	n.View()
	st = n.State(slot)
	require.NotNil(t, st, "r is back: x imports the slot from it")
	assert.Equal(t, ModeImporting, st.Mode())
	assert.Equal(t, "r", st.peer.Name)
	assert.True(t, st.keep, "keeping its keys, as the rejoin did")
	assert.False(t, n.Takeover().Lost(slot), "no longer lost: the import decides it")
}

// TestLostSlotRefusesAnotherNodesKeys: a node that has a slot lost, with
// its dead old owner h as holder, refuses kept keys or a PULL's answer for
// it from another node k (the DONE that follows IMPORT mode pull), so
// that k keeps them; from h it takes them, and the loss ends.
// TestRedMinorityPausedAtHeal: n2 took n4's kept keys of chunk 789-809
// and kept the chunk lost (holder n1); when the table gave the chunk to n4
// again n2 forwent it and answered n4 "ASK n1", and n1, which never held
// it, released it: n4 had dropped its keys and served the chunk from
// nothing, 21 to 23 of 20. Before, the keys were taken.
func TestLostSlotRefusesAnotherNodesKeys(t *testing.T) {
	v1 := alive(viewOf(t, 1, []string{"x", "h", "k"}))
	v2 := alive(viewOf(t, 2, []string{"x", "k"}, "h"))
	slot := slotWhere(t, "a slot of h's that h's death gives x", func(slot int) bool {
		return v1.Table.Owner(slot).Name == "h" && v2.Table.Owner(slot).Name == "x"
	})
	n, cur := leasedNode(t, v1, &recorder{}, true)
	cur.Store(v2)
	n.View()
	require.True(t, n.Takeover().Lost(slot), "x holds none of h's copies: lost")
	require.Equal(t, "h", n.holderOf(slot))

	n.notePulled("k", []int{slot}, true)
	_, err := n.takeSlots("k", []int{slot})
	assert.Equal(t, errLostElsewhere, err, "k's keys are refused: k keeps them")
	assert.True(t, n.lostElsewhere("k", []int{slot}), "an IMPORT pull from k is refused too")
	assert.True(t, n.Takeover().Lost(slot))

	cur.Store(alive(viewOf(t, 3, []string{"x", "h", "k"})))
	n.View() // h is back: the table gives it the slot again, forgone here
	n.notePulled("h", []int{slot}, true)
	_, err = n.takeSlots("h", []int{slot})
	assert.Empty(t, err, "the holder's own keys are taken")
}

// alive makes every member of v's table a member of v (alive).
func alive(v *cluster.View) *cluster.View {
	for _, m := range v.Table.Nodes() {
		v.Members = append(v.Members, cluster.Member{Node: m})
	}
	return v
}

// TestReleasedAsksTheOldOwnerUnlessItRestarted: a node whose table moves
// a slot from p, alive, to o answers o's RELEASED with "ASK p" (thirdPrev),
// until p answers the lease from another process than the one the table
// gave the slot to: then it answers as if it named no one. Such a process
// keeps what its data dir restored of the slot for o and answers for it
// itself (keepRestored), or has nothing of it; it names its own import's
// guess, this node, back. TestRestartedFencerRemembers: with "ASK p"
// alone, c's imports of the 2635 slots a restarted a had served (and held
// no keys of) went round a and b to the end of the test.
func TestReleasedAsksTheOldOwnerUnlessItRestarted(t *testing.T) {
	xp := alive(viewOf(t, 1, []string{"x", "p"}))
	xpo := alive(viewOf(t, 2, []string{"x", "p", "o"}))
	slot := slotWhere(t, "a slot p owns without o and o with it", func(slot int) bool {
		return xp.Table.Owner(slot).Name == "p" && xpo.Table.Owner(slot).Name == "o"
	})
	var cur atomic.Pointer[cluster.View]
	cur.Store(xp)
	lease := cluster.NewLease("x", time.Hour)
	lease.SentAt(lease.Now(), []string{"x"})
	lease.NoteIncarnationAt(lease.Now(), "p", lease.Now(), 7) // the process the table gives the slot to
	n := buildNode(t, &cur, &recorder{}, lease, true)
	cur.Store(xpo)
	n.View()
	n.switchMu.Lock()
	n.ho.deadPrev[slot], n.ho.deadPrevInc[slot] = "p", 7 // as thirdPrev records it where x holds p's copies
	n.switchMu.Unlock()

	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" p "+strconv.Itoa(slot), releasedTo(n, "o", slot),
		"moved from p, alive, to o: ask p")
	lease.NoteIncarnationAt(lease.Now(), "p", lease.Now(), 9) // p restarted
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "o", slot), "p's process that held the slot is gone: no one to ask")
}

// TestForgoneSlotBackIsLostAgain: a slot lost at its owner d's confirmed
// death (x holds none of d's copies), forgone when the table gave it to
// another live node, and given back to x while d is still away, is lost
// again: d has its state. The simulation's seed 3665: n4 imported such a
// slot from the table's old owner, n1, which had it only forgone from n4
// and released it: n4 served it from 0 where n0, paused, had left 19.
// Before, it was imported as any slot x gains.
func TestForgoneSlotBackIsLostAgain(t *testing.T) {
	v1 := viewOf(t, 1, []string{"n4", "n0", "n1", "n3"})
	v2 := viewOf(t, 2, []string{"n4", "n1", "n3"}, "n0")
	v3 := viewOf(t, 3, []string{"n4", "n1", "n3", "n2"})
	v4 := viewOf(t, 4, []string{"n4", "n1", "n3"}, "n2")
	slot := slotWhere(t, "a slot of n0's that n0's death gives n4, n2's join a live node, and n2's death n4 again", func(slot int) bool {
		o3 := v3.Table.Owner(slot).Name
		return v1.Table.Owner(slot).Name == "n0" && v2.Table.Owner(slot).Name == "n4" && o3 != "n4" && o3 != "n2" &&
			v4.Table.Owner(slot).Name == "n4"
	})
	n, cur := leasedNode(t, v1, &recorder{}, true)
	cur.Store(v2)
	n.View()
	require.True(t, n.Takeover().Lost(slot), "n4 holds none of n0's copies: lost")
	cur.Store(v3)
	n.View()
	require.False(t, n.Takeover().Lost(slot), "another node owns it: forgone here")
	cur.Store(v4)
	n.View()
	assert.True(t, n.Takeover().Lost(slot), "back here while n0 is away: lost again, n0 has its state")
	assert.Nil(t, n.ho.state(slot), "no import from the table's old owner, which never had its state")
}
