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
