package handoff

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// heldImports is a recorder whose IMPORTs wait until the test ends: a
// handoff that stays in its copy phase (its new owner cut off, say).
type heldImports struct {
	recorder
	release chan struct{}
}

func (f *heldImports) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	if string(cmds[0][1]) == cluster.PeerImport {
		<-f.release
	}
	return f.recorder.Forward(ctx, addr, cmds)
}

// TestUncutHandoffKeepsItsKeys: a node handing a slot to d, with no DONE
// sent, whose table gives the slot back at d's confirmed death, keeps its
// keys rather than promoting its copies of d's: d never served the slot,
// which this node served all along. The simulation's seed 527 at an
// import wait of 1 s: n3 had imported slot 11822 from n1 by a live
// handoff, taking n1's shipments of it as copies meanwhile (87), and
// served it to 103; the table gave the slot to n1, cut off, and n1's
// death gave it back before the handoff went: n3 served from 87.
func TestUncutHandoffKeepsItsKeys(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "c"})
	v2 := viewOf(t, 2, []string{"x", "c", "d"})
	v3 := viewOf(t, 3, []string{"x", "c"}, "d")
	var key []byte
	for i := 0; key == nil; i++ {
		k := []byte("uncut" + strconv.Itoa(i))
		if s := cluster.Slot(k); v1.Table.Owner(s).Name == "x" && v2.Table.Owner(s).Name == "d" && v3.Table.Owner(s).Name == "x" {
			key = k
		}
	}
	slot := cluster.Slot(key)
	var cur atomic.Pointer[cluster.View]
	cur.Store(v1)
	fw := &heldImports{release: make(chan struct{})}
	t.Cleanup(func() { close(fw.release) })
	n := buildNode(t, &cur, fw, nil, true)
	n.switchMu.Lock()
	n.ho.set(slot, nil) // served here (the first view's import is a joiner's)
	n.switchMu.Unlock()
	now := time.Now().UnixNano()
	p := window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Hour}
	require.NoError(t, n.store.Import(shard.Entry{Key: key, Params: p, State: window.State{uint64(now), 103}}, now))

	cur.Store(v2)
	n.View() // x hands the slot to d; its first copy waits
	require.Eventually(t, func() bool { return n.Handing(slot) }, 5*time.Second, time.Millisecond, "x hands the slot over, no DONE sent")
	require.NoError(t, n.Replicator().Copies().Import(shard.Entry{Key: key, Params: p, State: window.State{uint64(now), 87}}, now)) // d's shipment, older

	cur.Store(v3)
	n.View() // d's death gives the slot back to x
	info, ok := n.store.Get(key, now)
	require.True(t, ok)
	assert.Equal(t, int64(103), info.Count, "x keeps its keys: d never served the slot")
}
