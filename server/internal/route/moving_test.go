package route

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
)

// TestImportServesNoHop: a node importing a slot serves no request that
// comes as hopHandoff, whichever node sends it: one from another node,
// which forwards by a table naming this node, was served here from
// nothing while the old owner still held the slot; and one from the old
// owner itself is a relay by its table too (TestRedPausedAtHeal, chunk
// 789-809: n4 had handed the chunk to n2, paused; at n2's confirmed death
// n1 imported it from n4, n4 relayed a client's request to n1 by its
// table, and n1 served it from nothing: 21 of 20). The old owner's own
// requests after its cut find the import ended by its DONE. Before, a
// hop from the import's old owner was served.
func TestImportServesNoHop(t *testing.T) {
	rt := &Router{on: true}
	const slot = 42
	st := handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: cluster.Node{Name: "a", Addr: "127.0.0.1:1"},
		Until: time.Now().Add(time.Hour)})
	for _, from := range []string{"a", "c"} {
		r := rt.routeMoving(&Conn{peerName: from, hop: hopHandoff}, slot, st)
		assert.False(t, r.local, "a hop from %s", from)
		assert.Equal(t, errHandedOff, r.reply, "a hop from %s", from)
	}
	r := rt.routeMoving(&Conn{peerName: "c", hop: hopForward}, slot, st)
	assert.Equal(t, "a", r.owner.Name, "a forwarded request goes to the old owner")
}
