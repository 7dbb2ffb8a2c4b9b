package handoff

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
)

// TestStalePullAnswerAdoptsNoHandedSlot: x handed a slot to r, its owner
// by x's table; r's answer to a PULL x sent before (IMPORT pull with no
// keys, then DONE) comes after, and x adopts nothing: r serves the slot
// (handedNotAdopted). The simulation's cold seed 3704: n1 adopted the slot
// from such a DONE, its table later gave it the slot, and n1 and n4 both
// served it. Before, the DONE made the slot adopted here.
func TestStalePullAnswerAdoptsNoHandedSlot(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r"})
	for _, m := range v.Table.Nodes() {
		v.Members = append(v.Members, cluster.Member{Node: m, State: cluster.StateAlive})
	}
	slot := slotWhere(t, "a slot r owns", func(slot int) bool { return v.Table.Owner(slot).Name == "r" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	n := testNode(t, &cur, &recorder{})
	n.switchMu.Lock()
	n.ho.setHolder("r", []int{slot}) // handed to r: its migration's cut
	n.switchMu.Unlock()

	w := &nopWriter{}
	spec := []byte(strconv.Itoa(slot))
	n.peerImport(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerImport), []byte("r"),
		[]byte("pull"), spec, persistence.AppendEntries(nil, nil, 0)})
	require.Equal(t, "+OK", w.last)
	n.peerDone(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerDone), []byte("r"), spec})
	require.Equal(t, "+OK", w.last)
	assert.Nil(t, n.ho.state(slot), "not adopted: r serves it")
}
