package handoff

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/cluster"
)

// TestJoinerSeedsDeadPrevFromALateKnownMember: a cold start's process (n1)
// learns a member (n3) from another member's known set after the table
// change its meeting made; n3, dead there, was never in n1's tables. n1's
// table gives slot s to n0 with n1 its backup; with n3 in the table, as
// n4's still has it (declared dead, not confirmed), s is n4's, and n4 may
// have served it. n1 answers n0's PULL for s with no DONE without copies,
// and its RELEASED names n4, as it would had the table change come after
// the merge. Before, the merge made no marks until the next table change:
// n1 answered the PULL with a DONE, and n0 would serve s from 0 while n4
// served it too (the shape of the simulation's cold seed 3548).
func TestJoinerSeedsDeadPrevFromALateKnownMember(t *testing.T) {
	healed := alive(viewOf(t, 3, []string{"n1", "n0", "n2", "n4"}))
	all := viewOf(t, 4, []string{"n1", "n0", "n2", "n3", "n4"})
	slot := slotWhere(t, "a slot n0 owns and n1 backs up, another member's with n3", func(s int) bool {
		ru, ok := healed.Table.RunnerUp(s)
		p := all.Table.Owner(s).Name
		return healed.Table.Owner(s).Name == "n0" && ok && ru.Name == "n1" && p != "n0" && p != "n1" && p != "n3"
	})
	p := all.Table.Owner(slot).Name
	var cur atomic.Pointer[cluster.View]
	var known atomic.Pointer[[]string]
	setKnown := func(names ...string) { known.Store(&names) }
	setKnown("n0", "n1")
	cur.Store(viewOf(t, 1, []string{"n1"})) // a cold start: alone until it meets a member
	n := nodeWith(t, &cur, func(c *Config) {
		c.Joins, c.Known = true, func() []string { return *known.Load() }
	})
	cur.Store(alive(viewOf(t, 2, []string{"n1", "n0"})))
	n.View()
	setKnown("n0", "n1", "n2", "n4") // the heal: n1 meets n2 and n4
	cur.Store(healed)
	n.View()
	setKnown("n0", "n1", "n2", "n3", "n4") // n2's known set names n3

	_, backed := n.backedUpFor("n0", []int{slot})
	assert.Empty(t, backed, "n1 never saw %s hand the slot over: no DONE without copies", p)
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" "+p+" "+strconv.Itoa(slot), releasedTo(n, "n0", slot),
		"n1 never saw %s hand the slot over: ask it", p)
}
