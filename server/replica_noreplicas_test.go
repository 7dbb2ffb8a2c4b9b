package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncLog records the RL.PEER SYNCs a primary sends its backups, and
// their replies.
type syncLog struct {
	cluster.Forwarder
	mu      sync.Mutex
	args    []int // each SYNC's argument count
	replies []string
}

func (l *syncLog) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	reps, err := l.Forwarder.Forward(ctx, addr, cmds)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, args := range cmds {
		if len(args) > 1 && cluster.IsWord(args[1], cluster.PeerSync) {
			l.args = append(l.args, len(args))
			if i < len(reps) {
				l.replies = append(l.replies, string(reps[i]))
			}
		}
	}
	return reps, err
}

func (l *syncLog) sent() ([]int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.args...), append([]string(nil), l.replies...)
}

// TestShipToNodeWithoutReplicas: a primary with replicas whose backup
// keeps none (--replicas 0) gets cluster.PeerNoReplicas for its full
// sync's RL.PEER SYNC, and does not take it for the refusal of a node
// from before SYNC's backed bitmap: it sends no shorter SYNC. Before,
// the backup answered NOPERM bad cluster credentials, which read as a
// wrong secret in the primary's log and as an old node to sendSync, which
// sent every full sync's SYNC twice.
func TestShipToNodeWithoutReplicas(t *testing.T) {
	rec := &syncLog{}
	a := startTestNode(t, "node0", nil, clusterOpts{secret: []byte("k"), replicas: true,
		wrapShip: func(f cluster.Forwarder) cluster.Forwarder { rec.Forwarder = f; return rec }})
	b := startTestNode(t, "node1", []string{a.ml.GossipAddr()}, clusterOpts{secret: []byte("k")})
	waitOwners(t, []*testNode{a, b}, 2)
	require.Eventually(t, func() bool { args, _ := rec.sent(); return len(args) >= 3 }, deadline, 5*time.Millisecond,
		"a tries full syncs to b, its backup")
	args, replies := rec.sent()
	for i, n := range args {
		assert.Equal(t, 5, n, "SYNC %d of %v: the newest form only (backed, ENDS)", i, args)
	}
	for _, rep := range replies {
		assert.Equal(t, "-"+cluster.PeerNoReplicas+"\r\n", rep)
	}
}
