package handoff

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// testNode is a node named by v's Self, with replicas, no lease, and fw as
// its transport; cur is its membership's view.
func testNode(t *testing.T, cur *atomic.Pointer[cluster.View], fw cluster.Forwarder) *Node {
	t.Helper()
	return buildNode(t, cur, fw, nil, true)
}

// buildNode is a node named by cur's Self, with fw as its transport, lease
// (nil: none), and replicas if asked.
func buildNode(t *testing.T, cur *atomic.Pointer[cluster.View], fw cluster.Forwarder, lease *cluster.Lease, replicas bool) *Node {
	t.Helper()
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	cfg := Config{View: cur.Load, Forwarder: fw, Store: store, Lease: lease,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Started: time.Now(), UnixNano: func() int64 { return time.Now().UnixNano() }}
	if replicas {
		copies, err := shard.New(shard.Config{})
		require.NoError(t, err)
		cfg.Replicas = &replica.Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: fw}
	}
	n, err := New(cfg)
	require.NoError(t, err)
	return n
}

// process is a member's process as lease answers name it: the member, and
// the process's incarnation.
type process struct {
	node string
	inc  uint64
}

// leasedNode is buildNode at view v, with a lease that v's Self holds
// (heldLease) and that has heard from procs before the node starts. The
// membership's view it returns takes a later view (then View).
func leasedNode(t *testing.T, v *cluster.View, fw cluster.Forwarder, replicas bool, procs ...process) (*Node, *atomic.Pointer[cluster.View]) {
	t.Helper()
	lease := heldLease(t, v.Self)
	for _, p := range procs {
		heard(lease, p)
	}
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	return buildNode(t, &cur, fw, lease, replicas), &cur
}

// heldLease is a lease of self's that holds (alone in its known set).
func heldLease(t *testing.T, self string) *cluster.Lease {
	t.Helper()
	lease := cluster.NewLease(self, time.Hour)
	lease.SentAt(lease.Now(), []string{self})
	require.True(t, lease.ServesAt(lease.Now()), "the lease holds")
	return lease
}

// heard records that lease's latest answer from p's member came from p.
func heard(lease *cluster.Lease, p process) {
	lease.NoteIncarnationAt(lease.Now(), p.node, lease.Now(), p.inc)
}

// movedNode is testNode at view from, with a recorder for transport, then
// at view to (a table change); its membership's view takes later ones.
func movedNode(t *testing.T, from, to *cluster.View) (*Node, *recorder, *atomic.Pointer[cluster.View]) {
	t.Helper()
	var cur atomic.Pointer[cluster.View]
	cur.Store(from)
	fw := &recorder{}
	n := testNode(t, &cur, fw)
	cur.Store(to)
	n.View()
	return n, fw, &cur
}

// awaitHandback makes n import slot from peer keeping its own keys: a
// rejoin's wait for peer's handback.
func awaitHandback(n *Node, slot int, peer cluster.Node) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	n.ho.set(slot, &SlotState{mode: ModeImporting, peer: peer, until: time.Now().Add(time.Hour), keep: true})
}

// holdKey stores key in n's store, used in a fixed window of 100 an hour
// that started at now.
func holdKey(t *testing.T, n *Node, key []byte, used uint64, now time.Time) {
	t.Helper()
	require.NoError(t, n.store.Import(shard.Entry{Key: key, Params: window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Hour},
		State: window.State{uint64(now.UnixNano()), used}}, now.UnixNano()))
}
