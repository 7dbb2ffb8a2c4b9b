package handoff

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestHandedSlotNotReleasedToANewProcess: a node that handed slots to p's
// process releases them to that process's RL.PEER RELEASED, and to no
// later process of p, which lost what the old one held: a slot whose
// copies it holds from p (and backs up for p) it answers as p's PULL,
// with the copies and a DONE; one whose copies it does not hold, with
// nothing. The simulation's seeds 2804 and 3983 (2363 at a 1 s import
// wait): n1 handed slot 6939 to n2 at 65, forgot its copies at its own
// rejoin, and released the slot to n2's new process, which served it
// from 0. Before, x released both slots to p's new process.
func TestHandedSlotNotReleasedToANewProcess(t *testing.T) {
	v := alive(viewOf(t, 1, []string{"x", "p"}))
	backed := func(slot int) bool {
		ru, ok := v.Table.RunnerUp(slot)
		return ok && ru.Name == "x" && v.Table.Owner(slot).Name == "p"
	}
	held := slotWhere(t, "a slot p owns and x backs up", backed)
	forgot := slotWhere(t, "another such slot", func(s int) bool { return s > held && backed(s) })
	fw := &recorder{}
	n, _ := leasedNode(t, v, fw, true, process{"p", 7}) // p's process that x hands the slots to
	n.View()
	n.noteHandedTo("p", []int{held, forgot})
	n.repl.KeepHanded(v, []int{held}) // x holds held's keys as p's copy; forgot's it forgot
	require.True(t, n.heldBy(held, "p"))

	assert.Equal(t, "+"+strconv.Itoa(held), releasedTo(n, "p", held), "handed to this very process: released")
	heard(n.lease, process{"p", 9}) // p restarted
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "p", forgot), "handed to p's old process, no copies held: nothing")
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "p", held), "handed to p's old process: not released")
	assert.Eventually(t, func() bool {
		c := fw.commands()
		return len(c) == 2 && c[0] == cluster.PeerImport+" pull" && c[1] == cluster.PeerDone+" "+formatSlots([]int{held})
	}, 5*time.Second, 10*time.Millisecond, "held's copies go to p's new process as a PULL's answer, and forgot's do not")

	n.noteHolder("p", []int{forgot}) // a record of another kind since (an import's, a loss's): no process named
	assert.Equal(t, "+"+strconv.Itoa(forgot), releasedTo(n, "p", forgot), "holder p by a record that names no process: released, as before")
}

// TestHandedSlotReleasedToAProcessThatRestoredIt: a later process of p
// whose data dir restored the store of the process a slot went to says so
// (RESTORED, the processes before it on that data dir), and is released
// the slot: it serves what that process left, up to the fsync policy's
// documented loss. One whose data dir names other processes is not.
func TestHandedSlotReleasedToAProcessThatRestoredIt(t *testing.T) {
	v := alive(viewOf(t, 1, []string{"x", "p"}))
	slot := slotWhere(t, "a slot p owns", func(s int) bool { return v.Table.Owner(s).Name == "p" })
	n := handedToOldProcess(t, v, slot) // p restarted since

	restored := func(incs string) string {
		return releasedAs(n, "p", slot, cluster.ReleasedRestored, incs, cluster.ReleasedPast)
	}
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "p", slot), "no word: not released")
	assert.Equal(t, "+"+releaseNone, restored("3,5"), "a data dir of other processes: not released")
	assert.Equal(t, "+"+strconv.Itoa(slot), restored("3,7"), "a data dir the slot's process ran on: released")
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedAs(n, "p", slot, cluster.ReleasedKeep, cluster.ReleasedRestored, "7", cluster.ReleasedPast),
		"after KEEP too")
}

// TestHandedSlotReleasedToTheProcessThatTookIt: the mark is the lease's
// latest word from p at the cut, which can be p's process of before a
// restart that the lease has not heard from yet, though the slot went to
// the new one. That process says the slot's DONE from x came to it
// (HANDED), and is released the slot; without the word it is not, as
// before, and the word for another slot releases this one nothing.
func TestHandedSlotReleasedToTheProcessThatTookIt(t *testing.T) {
	v := alive(viewOf(t, 1, []string{"x", "p"}))
	slot := slotWhere(t, "a slot p owns", func(s int) bool { return v.Table.Owner(s).Name == "p" })
	other := slotWhere(t, "another", func(s int) bool { return s > slot && v.Table.Owner(s).Name == "p" })
	n := handedToOldProcess(t, v, slot) // to process 9, marked 7: the lease had not heard from 9 yet

	handed := func(spec string) string {
		return releasedAs(n, "p", slot, cluster.ReleasedKeep, cluster.ReleasedHanded, spec, cluster.ReleasedPast)
	}
	assert.Equal(t, "+"+releaseNone, releasedAs(n, "p", slot, cluster.ReleasedKeep, cluster.ReleasedPast), "no word: not released")
	assert.Equal(t, "+"+releaseNone, handed(strconv.Itoa(other)), "another slot's word: not released")
	assert.Equal(t, "+"+strconv.Itoa(slot), handed(formatSlots([]int{slot, other})), "the process it went to: released")
}

// TestReleasedSaysHandedAndFallsBack: a process asks RELEASED naming the
// question's slots the asked node handed to it (HANDED), and asks again
// without the word when the node predates it (NOPERM), PAST kept.
func TestReleasedSaysHandedAndFallsBack(t *testing.T) {
	v := alive(addrView(t, 1, "c", "a", "c"))
	slot := slotWhere(t, "a slot c owns", func(s int) bool { return v.Table.Owner(s).Name == "c" })
	other := slotWhere(t, "another", func(s int) bool { return s > slot && v.Table.Owner(s).Name == "c" })
	old := &refusing{word: cluster.ReleasedHanded, slot: slot}
	c, _ := leasedNode(t, v, old, true)
	c.switchMu.Lock()
	c.ho.noteHanded("a", []int{slot})
	c.switchMu.Unlock()
	a, _ := v.Table.Node("a")
	released, _, err := c.released(a, []int{slot, other}, false, nil, true)
	require.NoError(t, err)
	assert.Equal(t, []int{slot}, released, "the older form's answer")
	assert.Equal(t, [][]string{{cluster.ReleasedHanded, strconv.Itoa(slot), cluster.ReleasedPast}, {cluster.ReleasedPast}}, old.seen(),
		"HANDED refused, then PAST alone")
}

// refusing is a Forwarder that answers RL.PEER RELEASED as a node that
// predates word: NOPERM for a form with it, and slot released to any
// other. It records each question's arguments after the slots, and
// answers any other command OK.
type refusing struct {
	word  string
	slot  int
	mu    sync.Mutex // guards forms: the node's own imports ask too, from their timers
	forms [][]string
}

// seen returns the forms asked so far.
func (o *refusing) seen() [][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.forms)
}

func (o *refusing) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	if string(cmds[0][1]) != cluster.PeerReleased {
		return [][]byte{[]byte("+OK")}, nil
	}
	var form []string
	for _, a := range cmds[0][4:] {
		form = append(form, string(a))
	}
	o.mu.Lock()
	o.forms = append(o.forms, form)
	o.mu.Unlock()
	if slices.Contains(form, o.word) {
		return [][]byte{[]byte("-" + cluster.PeerRefused)}, nil
	}
	return [][]byte{[]byte("+" + strconv.Itoa(o.slot))}, nil
}

func (o *refusing) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

// TestRestoredProcessTakesTheSlotBetweenTwoNodes: the wait of
// TestOperatorEndsTheWaitOfANewProcess does not come for a new process
// whose data dir restored the store of the process the slot went to: its
// lease names that process (cluster-processes), its RL.PEER RELEASED says
// RESTORED, and x releases the slot, which p serves from what it
// restored, with no operator.
func TestRestoredProcessTakesTheSlotBetweenTwoNodes(t *testing.T) {
	vx := alive(viewOf(t, 1, []string{"x", "p"}))
	slot := slotWhere(t, "a slot p owns", func(s int) bool { return vx.Table.Owner(s).Name == "p" })
	x := handedToOldProcess(t, vx, slot) // p crashed and restarted on its data dir

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, cluster.ProcessFileName), []byte("rlstore-processes 1\n7\n"), 0o600))
	procs, err := cluster.OpenProcessFile(dir)
	require.NoError(t, err)
	m, err := cluster.Prepare(cluster.Config{NodeName: "p", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:1", Timing: cluster.TestTiming(),
		Logger: slog.New(slog.DiscardHandler), Processes: procs})
	require.NoError(t, err)
	t.Cleanup(m.Kill)
	require.Equal(t, []uint64{7}, m.Lease().Restored())

	p, asked := importerFrom(t, x, m.Lease(), slot)
	askNow(t, p, slot, asked)
	assert.Eventually(t, func() bool { return p.State(slot) == nil }, 10*time.Second, time.Millisecond, "released: p serves the slot")
}

// handedToOldProcess returns x, at view v of x and p with a lease it
// holds and replicas, which handed slots to p's process 7 (the lease's
// word at the cut) and has heard from p's process 9 since.
func handedToOldProcess(t *testing.T, v *cluster.View, slots ...int) *Node {
	t.Helper()
	x, _ := leasedNode(t, v, &recorder{}, true, process{"p", 7})
	x.noteHandedTo("p", slots)
	heard(x.lease, process{"p", 9})
	return x
}

// importerFrom returns p, at a view of p and x with lease, whose first
// view makes it import slot from x (a guess). It asks x's RL.PEER
// RELEASED and SERVES as x answers them (askNode), and the slots of each
// RELEASED go to the channel it returns.
func importerFrom(t *testing.T, x *Node, lease *cluster.Lease, slot int) (*Node, chan string) {
	t.Helper()
	var cur atomic.Pointer[cluster.View]
	cur.Store(alive(viewOf(t, 1, []string{"p", "x"})))
	asked := make(chan string, 1024)
	p := buildNode(t, &cur, &askNode{to: x, asked: asked}, lease, false)
	st := p.State(slot)
	require.True(t, st != nil && st.Mode() == ModeImporting && st.Peer().Name == "x", "p's new process imports the slot from x")
	return p, asked
}

// askNow makes n's import of slot ask its old owner RL.PEER RELEASED now,
// and waits for the question on asked.
func askNow(t *testing.T, n *Node, slot int, asked <-chan string) {
	t.Helper()
	st := n.State(slot)
	n.ho.set(slot, &SlotState{mode: ModeImporting, peer: st.peer, until: time.Now(), guess: st.guess})
	n.expireImports()
	require.Equal(t, strconv.Itoa(slot), <-asked)
}
