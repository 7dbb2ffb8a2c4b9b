package handoff

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// TestLostAtOwnerGetsNoDone: a slot whose owner's last full sync here
// named it lost there (SYNC's LOST, with its holder) gets no DONE without
// copies at the owner's PULL (a new process's, say), and the owner's
// RELEASED is answered "ASK" the holder; a slot lost with no holder known
// is not released. The simulation's seed 2363, once a full sync no longer
// ships a lost slot's keys: the backup knew nothing of the slot, answered
// the owner's new process with a DONE without copies, and it served the
// slot from nothing while the holder kept its state. Before, the DONE
// went.
func TestLostAtOwnerGetsNoDone(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r"})
	slot := slotWhere(t, "a slot r owns and x backs up", func(slot int) bool {
		ru, ok := v.Table.RunnerUp(slot)
		return v.Table.Owner(slot).Name == "r" && ok && ru.Name == "x"
	})
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	n := testNode(t, &cur, &recorder{})
	_, backed := n.backedUpFor("r", []int{slot})
	require.Equal(t, []int{slot}, backed, "a slot x knows nothing else of: DONE, as on a cluster's first formation")
	require.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot))

	sync := func(holder string) {
		t.Helper()
		drop, lost := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
		drop[slot/8] |= 1 << (slot % 8)
		lost[slot/8] |= 1 << (slot % 8)
		w := &nopWriter{}
		var st replica.Stream
		n.Replicator().PeerSync(w, &st, "r", [][]byte{drop, make([]byte, cluster.Slots/8), []byte(cluster.PeerSyncEnds),
			[]byte(cluster.PeerSyncLost), []byte(holder), lost})
		require.Equal(t, "+OK", w.last)
	}
	sync("h")
	_, backed = n.backedUpFor("r", []int{slot})
	assert.Empty(t, backed, "r's sync named the slot lost there: no DONE without copies")
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" h "+strconv.Itoa(slot), releasedTo(n, "r", slot), "ASK the holder")
	sync("")
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "no holder known: not released")
}
