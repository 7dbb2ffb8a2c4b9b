package handoff

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestReleasedNamesNoRestartedDeadOwner: a node asked RL.PEER RELEASED for
// a slot its table gave the asker at its old owner d's death answers
// "ASK d" while d's process that held the slot may come back, and
// releases it once d answers the lease from a new process: the process
// that held the slot's state is gone (deadRestart). The simulation's seed
// 2681 at a 1 s import wait: n0 named n1's new process to n3, which had
// taken the slot over at n1's death, and n1 served it from 0 where n3 had
// left 94. Before, the dead owner was named whatever process answered.
func TestReleasedNamesNoRestartedDeadOwner(t *testing.T) {
	v1, v2, slot := deadOwnerViews(t)
	n, cur := leasedNode(t, v1, &recorder{}, true, process{node: "d", inc: 7})
	cur.Store(v2)
	n.View()
	require.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), releasedTo(n, "r", slot),
		"d's process that held the slot may be back: ASK d")
	n.lease.NoteIncarnationAt(n.lease.Now(), "d", n.lease.Now()+int64(time.Millisecond), 9) // d restarted
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot), "d's process that held the slot is gone: released")
}
