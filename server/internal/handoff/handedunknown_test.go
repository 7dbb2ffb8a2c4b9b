package handoff

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/cluster"
)

// TestHandedSlotToAnUnknownProcess: a slot handed to p before x's lease
// heard from any process of p (a cold start) is released only to a process
// of p that claims it took the slot's DONE (HANDED), not to one that does
// not, though the lease knows p's process now: p may have crashed since
// (unknownProcess). The simulation's cold seed 1733 at a 1 s import wait:
// n2 handed slot 11051 (7 used) to n4 20 ms after n4 started, n4 crashed,
// and n2 released the slot to n4's next process, which served it from 0.
// Before, x released it. A node without a lease releases it as before.
func TestHandedSlotToAnUnknownProcess(t *testing.T) {
	v := alive(viewOf(t, 1, []string{"x", "p"}))
	slot := slotWhere(t, "a slot p owns", func(s int) bool { return v.Table.Owner(s).Name == "p" })
	x, _ := leasedNode(t, v, &recorder{}, true) // its lease has heard from no process of p
	x.View()
	x.noteHandedTo("p", []int{slot})
	heard(x.lease, process{"p", 9})

	assert.Equal(t, "+"+releaseNone, releasedTo(x, "p", slot), "no claim: not released")
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedAs(x, "p", slot, cluster.ReleasedHanded, strconv.Itoa(slot), cluster.ReleasedPast),
		"the process that took its DONE: released")

	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	unleased := testNode(t, &cur, &recorder{})
	unleased.View()
	unleased.noteHandedTo("p", []int{slot})
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(unleased, "p", slot), "no lease, no process known ever: released")
}
