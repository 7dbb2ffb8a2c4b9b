package handoff

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
)

// loser is a Forwarder that answers every RL.PEER IMPORT OK and loses the
// first DONE's answer (cluster.ErrUnreachable, as a cut does); it records
// each IMPORT's mode and each DONE.
type loser struct {
	mu   sync.Mutex
	sent []string
	lost bool
}

func (f *loser) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		switch sub := string(args[1]); sub {
		case cluster.PeerImport:
			f.sent = append(f.sent, sub+" "+string(args[3]))
		case cluster.PeerDone:
			f.sent = append(f.sent, sub)
			if !f.lost {
				f.lost = true
				return nil, cluster.ErrUnreachable
			}
		}
		reps[i] = []byte("+OK\r\n")
	}
	return reps, nil
}

func (f *loser) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

func (f *loser) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// TestKeptKeysSentOnceGoOnInPull: kept keys of mode handback whose DONE
// got no answer are sent again in mode pull, since the owner stored them
// and may have served the slot since (sentOnce). The simulation's seed
// 4181: n4's second push of slot 12336 replaced the 60 n0 had served
// since the first with n4's 49. Before, they went again in mode handback.
func TestKeptKeysSentOnceGoOnInPull(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r"})
	slot := slotWhere(t, "a slot r owns", func(slot int) bool { return v.Table.Owner(slot).Name == "r" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	fw := &loser{}
	n := nodeWith(t, &cur, func(c *Config) { c.Forwarder = fw })
	r, _ := v.Table.Node("r")
	n.abandon(&Migration{to: r, slots: []int{slot}, first: "replace"}, []int{slot}, cluster.ErrUnreachable)
	require.Eventually(t, func() bool { return len(fw.commands()) == 2 && n.keeps(slot) && !n.pushing.Load() },
		5*time.Second, time.Millisecond, "the first push, its DONE's answer lost: the keys are kept")
	assert.Equal(t, []string{cluster.PeerImport + " handback", cluster.PeerDone}, fw.commands())
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "not released while its keys are kept")

	n.pushKept()
	require.Eventually(t, func() bool { return !n.keeps(slot) && !n.pushing.Load() },
		5*time.Second, time.Millisecond, "the second push is taken")
	assert.Equal(t, cluster.PeerImport+" pull", fw.commands()[2], "r has them: they fill only the keys it lacks")
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot))
}

// TestKeptBehindGoesWithoutDone: a rejoin's import of a slot from the node
// that took it over at its death (p), moved on by the table to a third
// node (o) before p handed it back, keeps its keys and sends them to o
// without a DONE, then names p the slot's holder: o's RELEASED is
// answered "ASK p" (keptBehind). The simulation's seed 4229: the DONE
// ended o's import, and o served the rejoin's older keys while p, paused,
// held newer ones. Before, the DONE went, and the slot was released to o.
func TestKeptBehindGoesWithoutDone(t *testing.T) {
	xop := viewOf(t, 1, []string{"x", "o", "p"})
	xp := viewOf(t, 2, []string{"x", "p"}, "o")
	back := viewOf(t, 3, []string{"x", "o", "p"})
	var key []byte
	for i := 0; key == nil; i++ {
		k := []byte("behind" + strconv.Itoa(i))
		if s := cluster.Slot(k); xop.Table.Owner(s).Name == "o" && xp.Table.Owner(s).Name == "x" {
			key = k
		}
	}
	slot := cluster.Slot(key)
	n, fw, cur := movedNode(t, xop, xp)
	now := time.Now()
	p, _ := xp.Table.Node("p")
	holdKey(t, n, key, 42, now)
	awaitHandback(n, slot, p) // a rejoin's wait for p's handback
	cur.Store(back)
	n.View()
	require.Eventually(t, func() bool { return !n.keeps(slot) && !n.pushing.Load() }, 5*time.Second, time.Millisecond, "the kept keys go to o")
	assert.Contains(t, fw.commands(), cluster.PeerImport+" handback")
	assert.NotContains(t, fw.commands(), cluster.PeerDone+" "+strconv.Itoa(slot), "no DONE: p may hold newer keys")
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" p "+strconv.Itoa(slot), releasedTo(n, "o", slot), "ASK p")
	_, ok := n.store.Get(key, now.UnixNano())
	assert.True(t, ok, "x keeps its keys: o holds them only as an import's (seed 3986)")
}

// TestAskedBackToTheKeptKeysServes: an import whose keys a node's push
// brought without a DONE (keptBehind), sent on by ASK to another node
// that names that node back (it never served the slot: it had it lost,
// with that node its holder), serves the keys that came. Before, the
// import went round the ASK circle and waited.
func TestAskedBackToTheKeptKeysServes(t *testing.T) {
	v := viewOf(t, 1, []string{"o", "r", "p"})
	slot := slotWhere(t, "a slot o owns", func(slot int) bool { return v.Table.Owner(slot).Name == "o" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	n := testNode(t, &cur, &recorder{})
	r, _ := v.Table.Node("r")
	st := &SlotState{mode: ModeImporting, peer: r, until: time.Now().Add(time.Hour)}
	n.switchMu.Lock()
	n.ho.set(slot, st)
	n.switchMu.Unlock()
	w := &nopWriter{}
	n.peerImport(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerImport), []byte("r"),
		[]byte("pull"), []byte(strconv.Itoa(slot)), persistence.AppendEntries(nil, nil, time.Now().UnixNano())})
	require.Equal(t, "+OK", w.last)
	n.askElsewhere(st, "p", []int{slot})
	atP := n.ho.state(slot)
	require.NotNil(t, atP)
	require.Equal(t, "p", atP.peer.Name, "r named p: o imports from p")
	n.askElsewhere(atP, "r", []int{slot})
	assert.Nil(t, n.ho.state(slot), "p named r, whose keys came: o serves them")
}

// TestBehindBackKeepsItsKeys: a slot whose kept keys went without a DONE
// (keptBehind: to o, naming p the holder), and that the table then gives
// back to this node, is imported from p; when the table moves it on to p
// before the import ends, the keys are kept for p and pushed with a DONE
// (backBehind). The simulation's seed 254 at a 1 s
// import wait: n4's import of slot 14392 from n1 kept nothing, and n4
// released the slot to n1's new process, which served it from 0 where n4
// held 73. Before, nothing was kept or pushed, and the slot was released.
func TestBehindBackKeepsItsKeys(t *testing.T) {
	xop := viewOf(t, 1, []string{"x", "o", "p"})
	xp := viewOf(t, 2, []string{"x", "p"}, "o")
	on := viewOf(t, 5, []string{"x", "o", "p", "q", "s"}) // o back, and two more: the slot goes to p
	slot := slotWhere(t, "a slot o owns with o, x without o, and p with q and s", func(s int) bool {
		return xop.Table.Owner(s).Name == "o" && xp.Table.Owner(s).Name == "x" && on.Table.Owner(s).Name == "p"
	})
	var key []byte
	for i := 0; key == nil; i++ {
		if k := []byte("behind" + strconv.Itoa(i)); cluster.Slot(k) == slot {
			key = k
		}
	}
	n, fw, cur := movedNode(t, xop, xp)
	now := time.Now()
	p, _ := xp.Table.Node("p")
	holdKey(t, n, key, 73, now)
	awaitHandback(n, slot, p) // a rejoin's wait for p's handback
	cur.Store(viewOf(t, 3, []string{"x", "o", "p"}))
	n.View()
	require.Eventually(t, func() bool { return !n.keeps(slot) && !n.pushing.Load() }, 5*time.Second, time.Millisecond, "the kept keys go to o")
	require.NotContains(t, fw.commands(), cluster.PeerDone+" "+strconv.Itoa(slot), "no DONE: keptBehind")

	cur.Store(viewOf(t, 4, []string{"x", "p"}, "o")) // o crashed with them: the slot is x's again
	n.View()
	st := n.State(slot)
	require.True(t, st != nil && st.Mode() == ModeImporting && st.peer.Name == "p", "x imports the slot from p, its holder")
	assert.False(t, st.keep, "not an import that keeps: o may have served the keys and hand the slot back in mode reset (seed 341)")

	cur.Store(on) // the table moves it on to p before the import ends
	n.View()
	require.Eventually(t, func() bool { return slices.Contains(fw.commands(), cluster.PeerDone+" "+strconv.Itoa(slot)) },
		5*time.Second, time.Millisecond, "x's keys go to p, with a DONE")
	_, ok := n.store.Get(key, now.UnixNano())
	assert.False(t, ok && !n.keeps(slot) && n.holderOf(slot) == "", "x released nothing it held")
}
