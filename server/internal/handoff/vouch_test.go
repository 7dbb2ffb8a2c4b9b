package handoff

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/cluster"
)

// TestNewProcessReleasesOnlyWhatItSaw: a new process (x) that has not had
// a known member (d) in any table answers RL.PEER RELEASED for a slot it
// never handed the asker with no slot, though its table names the asker
// the owner and no record of its names another holder: d may have taken
// the slot over and served it. A slot it handed the asker it releases, and
// once d is in its table it answers as before. The simulation's seeds 362
// and 1276 at a 1 s import wait: such a process released a slot that the
// paused member out of its tables had served since its owner's death, and
// the owner's new process served it from 0. Before, x released both slots.
func TestNewProcessReleasesOnlyWhatItSaw(t *testing.T) {
	all := viewOf(t, 1, []string{"x", "r", "c", "d"})
	shared := alive(viewOf(t, 3, []string{"x", "r", "c"}))
	cs := func(slot int) bool {
		return all.Table.Owner(slot).Name == "c" && shared.Table.Owner(slot).Name == "c"
	}
	slot := slotWhere(t, "a slot c owns with and without d", cs)
	handed := slotWhere(t, "another such slot", func(s int) bool { return s > slot && cs(s) })
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 2, []string{"x"})) // a new process: alone until it meets the members
	n := nodeWith(t, &cur, func(c *Config) {
		c.Joins, c.Known = true, func() []string { return []string{"c", "d", "r", "x"} }
	})
	cur.Store(shared)
	n.View()
	n.noteHolder("c", []int{handed}) // as if x had handed it to c

	assert.Equal(t, "+"+releaseNone, releasedTo(n, "c", slot), "x never saw d, which may hold the slot: it does not know")
	assert.Equal(t, "+"+strconv.Itoa(handed), releasedTo(n, "c", handed), "x handed this slot to c: released")

	cur.Store(alive(viewOf(t, 4, []string{"x", "r", "c", "d"})))
	n.View()
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "c", slot), "d is back, and the slot is c's: released")
}

// TestColdProcessVouchesOverTheKnownSetItMerged: a cold start's process
// (x, with seeds) knows the members it met and those the members it meets
// send in their known sets, dead ones included. x formed with r alone,
// cut off from c, d and e, which formed and served; d then died. At the
// heal x's table is {x, r, c, e}; once c's set names d, x answers r's
// RELEASED for a slot it never held with no slot, though no table change
// came after the merge: d was never in x's tables, and the slot's state
// may be with the side that served it. The simulation's cold seed 3548 at
// a 1 s import wait, whose model counted only the members met: x released
// r's slot, r served it from 0, and the node that had served it served it
// too.
func TestColdProcessVouchesOverTheKnownSetItMerged(t *testing.T) {
	healed := alive(viewOf(t, 3, []string{"x", "r", "c", "e"}))
	all := viewOf(t, 4, []string{"x", "r", "c", "d", "e"})
	slot := slotWhere(t, "a slot r owns, x backs up, with and without d", func(s int) bool {
		ru, ok := healed.Table.RunnerUp(s)
		return healed.Table.Owner(s).Name == "r" && ok && ru.Name == "x" && all.Table.Owner(s).Name == "r"
	})
	var cur atomic.Pointer[cluster.View]
	var known atomic.Pointer[[]string]
	setKnown := func(names ...string) { known.Store(&names) }
	setKnown("r", "x")
	cur.Store(viewOf(t, 1, []string{"x"})) // a cold start: alone until it meets a member
	n := nodeWith(t, &cur, func(c *Config) {
		c.Joins, c.Known = true, func() []string { return *known.Load() }
	})
	cur.Store(alive(viewOf(t, 2, []string{"x", "r"})))
	n.View()
	setKnown("c", "e", "r", "x") // the heal: x meets c and e
	cur.Store(healed)
	n.View()
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot), "x has had every member it knows in a table: released")

	setKnown("c", "d", "e", "r", "x") // c's known set names d
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "x never saw d, which c and e met: it does not know")
}
