package route

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
)

// TestImportServesHopOnlyFromItsOldOwner: a node importing a slot serves
// a request that comes as hopHandoff only from the node it imports the
// slot from (its own, sent after its cut); one from another node, which
// forwards by a table naming this node, is answered HANDEDOFF. Before, it
// was served here from nothing while the old owner still held the slot
// (TestRedPausedAtHeal's single admissions above the limit).
func TestImportServesHopOnlyFromItsOldOwner(t *testing.T) {
	rt := &Router{on: true}
	const slot = 42
	st := handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: cluster.Node{Name: "a", Addr: "127.0.0.1:1"},
		Until: time.Now().Add(time.Hour)})
	from := &Conn{peerName: "a", hop: hopHandoff}
	assert.True(t, rt.routeMoving(from, slot, st).local, "the old owner's own request, after its cut")
	other := &Conn{peerName: "c", hop: hopHandoff}
	r := rt.routeMoving(other, slot, st)
	assert.False(t, r.local)
	assert.Equal(t, errHandedOff, r.reply)
}
