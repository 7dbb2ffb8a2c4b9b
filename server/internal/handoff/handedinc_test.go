package handoff

import (
	"strconv"
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
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	lease := cluster.NewLease("x", time.Hour)
	lease.SentAt(lease.Now(), []string{"x"})
	lease.NoteIncarnationAt(lease.Now(), "p", lease.Now(), 7) // p's process that x hands the slots to
	fw := &recorder{}
	n := buildNode(t, &cur, fw, lease, true)
	n.View()
	n.noteHandedTo("p", []int{held, forgot})
	n.repl.KeepHanded(v, []int{held}) // x holds held's keys as p's copy; forgot's it forgot
	require.True(t, n.heldBy(held, "p"))

	assert.Equal(t, "+"+strconv.Itoa(held), releasedTo(n, "p", held), "handed to this very process: released")
	lease.NoteIncarnationAt(lease.Now(), "p", lease.Now(), 9) // p restarted
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "p", forgot), "handed to p's old process, no copies held: nothing")
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "p", held), "handed to p's old process: not released")
	assert.Eventually(t, func() bool {
		c := fw.commands()
		return len(c) == 2 && c[0] == cluster.PeerImport+" pull" && c[1] == cluster.PeerDone+" "+formatSlots([]int{held})
	}, 5*time.Second, 10*time.Millisecond, "held's copies go to p's new process as a PULL's answer, and forgot's do not")

	n.noteHolder("p", []int{forgot}) // a record of another kind since (an import's, a loss's): no process named
	assert.Equal(t, "+"+strconv.Itoa(forgot), releasedTo(n, "p", forgot), "holder p by a record that names no process: released, as before")
}
