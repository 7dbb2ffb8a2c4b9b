package handoff

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowImports is a recorder whose IMPORTs take wait each: a last copy
// that outlasts the sender's lease.
type slowImports struct {
	recorder
	wait time.Duration
}

func (f *slowImports) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	if string(cmds[0][1]) == cluster.PeerImport {
		time.Sleep(f.wait)
	}
	return f.recorder.Forward(ctx, addr, cmds)
}

// TestNoDoneAfterTheLeaseRanOut: a handoff's DONE goes only while the old
// owner still holds its lease. Its last copy (after the gate) can take
// seconds; by then a majority may have taken its slots over, and a DONE
// would let the new owner serve them beside the node that took them
// (docs/cluster.md, the proof's step 5). Before, the lease was checked
// only before the gate.
func TestNoDoneAfterTheLeaseRanOut(t *testing.T) {
	for _, slow := range []bool{false, true} {
		lease := cluster.NewLease("x", 300*time.Millisecond)
		var cur atomic.Pointer[cluster.View]
		cur.Store(viewOf(t, 1, []string{"x", "to"}))
		fw := &slowImports{}
		if slow {
			fw.wait = 500 * time.Millisecond
		}
		n := buildNode(t, &cur, fw, lease, false)
		known := []string{"x", "to"}
		l := lease.Now()
		lease.SentAt(l, known)
		lease.AnsweredAt(l, "to", l, true, 0, known)
		require.True(t, n.serving())

		to, _ := cur.Load().Table.Node("to")
		_, _, err := n.copyFrom(n.store, to, []int{1, 2}, true, "replace")
		if slow {
			assert.ErrorIs(t, err, errNotServing)
			assert.Equal(t, []string{cluster.PeerImport + " replace"}, fw.commands(), "the copy, and no DONE")
		} else {
			assert.NoError(t, err)
			assert.Equal(t, []string{cluster.PeerImport + " replace", cluster.PeerDone + " 1-2"}, fw.commands())
		}
	}
}
