package handoff

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestFromDeadWaitsForTheHoldersLease: a slot whose state a dead holder
// held (an import from it) waits as the holder's own slots do: only until
// the holder's lease has run out, as its death's confirmation showed
// (cluster.Lease.WaitFor), not TakeoverWait from now; a holder whose death
// this node saw no confirmation of waits TakeoverWait.
func TestFromDeadWaitsForTheHoldersLease(t *testing.T) {
	l := cluster.NewLease("x", time.Second)
	v := viewOf(t, 1, []string{"x", "r", "b"})
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	n := buildNode(t, &cur, &recorder{}, l, false)

	now := l.Now()
	longAgo := now + int64(10*time.Second) // the age of the last grants: 10 s before this lease's clock began
	require.True(t, l.GrantsAt(-int64(10*time.Second), "d", true, 0))
	l.NoteDeath("d")
	for _, f := range []string{"r", "b"} {
		l.NoteGrantAgesAt(f, now, now, []string{"d"}, []int64{longAgo})
		l.NoteFencesAt(f, now, []string{"d"})
	}
	require.True(t, l.ConfirmedAt("d", []string{"x", "r", "b", "d"}, now), "x, r and b fence d: three of four")

	n.switchMu.Lock()
	n.fromDeadLocked([]int{1}, "d")
	n.switchMu.Unlock()
	assert.False(t, n.Takeover().Waits(1, l.Now()), "d's lease ran out long ago: served at once")

	n.switchMu.Lock()
	n.fromDeadLocked([]int{2}, "e")
	n.switchMu.Unlock()
	assert.True(t, n.Takeover().Waits(2, l.Now()), "no confirmation of e's death seen here: TakeoverWait")
}
