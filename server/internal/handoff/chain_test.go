package handoff

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// TestReleasedNamesAGuessOffThePast: a node whose table moves a slot from
// p, alive, to o, and which holds none of p's copies, answers o's
// RELEASED with "ASK p" (askChain): p may have held the slot without
// serving it, importing it from the node that did. The simulation's seed
// 1304: n0 released 14392 to n1's new process while n3, its old owner,
// imported it from n4, paused with 61; n1 served it from 0. It names p
// to no asker whose import p sent on already (PAST p): it answers as if
// it named no one, here released, which ends an ASK circle; nor to an
// asker that predates PAST, nor to a rejoin's question (KEEP).
func TestReleasedNamesAGuessOffThePast(t *testing.T) {
	xp := alive(viewOf(t, 1, []string{"x", "p", "q"}))
	xpo := alive(viewOf(t, 2, []string{"x", "p", "q", "o"}))
	slot := slotWhere(t, "a slot p owns without o and o with it", func(slot int) bool {
		return xp.Table.Owner(slot).Name == "p" && xpo.Table.Owner(slot).Name == "o"
	})
	n, cur := leasedNode(t, xp, &recorder{}, true)
	cur.Store(xpo)
	n.View()

	ask := "+" + releaseNone + " " + cluster.ReleasedAsk + " p " + strconv.Itoa(slot)
	released := "+" + strconv.Itoa(slot)
	assert.Equal(t, ask, releasedAs(n, "o", slot, cluster.ReleasedPast), "moved from p, whose copies x lacks, to o: ask p")
	assert.Equal(t, ask, releasedAs(n, "o", slot, cluster.ReleasedPast, "q"), "sent on by q alone: ask p")
	assert.Equal(t, released, releasedAs(n, "o", slot, cluster.ReleasedPast, "q", "p"), "p sent o here already: released")
	assert.Equal(t, released, releasedAs(n, "o", slot, cluster.ReleasedKeep, cluster.ReleasedPast), "a rejoin (KEEP): no guess, released as before")
	assert.Equal(t, released, releasedAs(n, "o", slot), "an asker that predates PAST: released, as before")
}

// TestAskCircleEnds: a cold start's circle. Nodes a and b, whose tables
// of a moment gave a slot to each other, see it move to c; each holds
// none of the other's copies, and names the other to c (askChain: the
// marks are set here as those tables leave them). c's import asks a, is
// sent on to b, and asks b naming a (PAST a): b answers as if it named
// no one, and releases the slot, which c then serves. Naming the old
// owner whatever the chain (f036ac8) sent c's imports a -> b -> a to the
// end of CI's TestSplitTwoOfFour.
func TestAskCircleEnds(t *testing.T) {
	all := func(self string) *cluster.View { return alive(addrView(t, 2, self, "a", "b", "c")) }
	slot := slotWhere(t, "a slot c owns", func(slot int) bool { return all("c").Table.Owner(slot).Name == "c" })
	route := &peerRoute{nodes: map[string]*Node{}}
	for self, other := range map[string]string{"a": "b", "b": "a"} {
		n, _ := leasedNode(t, all(self), &recorder{}, true)
		n.View()
		n.switchMu.Lock()
		n.ho.deadPrev[slot] = other
		n.ho.guessPrev[slot/64] |= 1 << (slot % 64)
		n.switchMu.Unlock()
		route.nodes[self] = n
	}
	c, cur := leasedNode(t, all("c"), route, true)
	a, _ := cur.Load().Table.Node("a")
	st := &SlotState{mode: ModeImporting, peer: a, until: time.Now()}
	c.ho.set(slot, st)

	c.askReleased(st, []int{slot})
	next := c.ho.state(slot)
	require.NotNil(t, next, "a named b: c imports from b")
	require.Equal(t, "b", next.peer.Name)
	require.Equal(t, []string{"a"}, next.Past(), "sent on by a")
	c.askReleased(next, []int{slot})
	assert.Nil(t, c.ho.state(slot), "b would name a, which sent c here: it releases the slot, and c serves it")
	assert.Equal(t, []string{"RELEASED a PAST", "RELEASED b PAST a"}, route.asked(), "one question each, the second naming a")
}

// TestReleasedFallsBackWithoutPast: a node that predates PAST refuses
// the question that carries it (NOPERM, as for any form it does not
// know), and the asker asks again in the older form, KEEP kept.
func TestReleasedFallsBackWithoutPast(t *testing.T) {
	v := alive(addrView(t, 1, "c", "a", "c"))
	slot := slotWhere(t, "a slot c owns", func(slot int) bool { return v.Table.Owner(slot).Name == "c" })
	old := &refusing{word: cluster.ReleasedPast, slot: slot} // a node before PAST
	c, _ := leasedNode(t, v, old, true)
	a, _ := v.Table.Node("a")
	released, _, err := c.released(a, []int{slot}, true, []string{"b"}, true)
	require.NoError(t, err)
	assert.Equal(t, []int{slot}, released, "the older form's answer")
	assert.Equal(t, [][]string{{cluster.ReleasedKeep, cluster.ReleasedPast, "b"}, {cluster.ReleasedKeep}}, old.seen(),
		"PAST refused, then KEEP alone")
}

// addrView is viewOf with each node's address its name, and self named.
func addrView(t *testing.T, epoch uint64, self string, members ...string) *cluster.View {
	t.Helper()
	var nodes []cluster.Node
	for _, m := range members {
		nodes = append(nodes, cluster.Node{Name: m, Addr: m})
	}
	tb, err := cluster.NewTable(epoch, nodes)
	require.NoError(t, err)
	return &cluster.View{Self: self, Table: tb}
}

// peerRoute is a Forwarder that hands each RL.PEER RELEASED to the node
// its address names, and records the questions (the node asked, and the
// arguments after the slots); it answers any other command OK.
type peerRoute struct {
	nodes map[string]*Node
	mu    sync.Mutex
	qs    []string
}

func (r *peerRoute) Forward(_ context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		if string(args[1]) != cluster.PeerReleased {
			reps[i] = []byte("+OK") // the hooks' other commands (a PULL, say)
			continue
		}
		w := &nopWriter{}
		r.nodes[addr].peerReleased(&core.Session{Out: w}, args)
		reps[i] = []byte(w.last)
		r.mu.Lock()
		r.qs = append(r.qs, "RELEASED "+addr+" "+string(joinArgs(args[4:])))
		r.mu.Unlock()
	}
	return reps, nil
}

func (r *peerRoute) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

func (r *peerRoute) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.qs)
}

// joinArgs joins args with spaces.
func joinArgs(args [][]byte) []byte {
	var b []byte
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, a...)
	}
	return b
}
