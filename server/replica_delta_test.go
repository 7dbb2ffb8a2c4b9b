package server

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decideOver gives key on n a counter a second for the last secs seconds,
// as a key decided every second for that long has: its changes from now on
// ship as deltas.
func decideOver(t *testing.T, n *testNode, key string, secs int) {
	t.Helper()
	p := window.Params{Kind: window.KindSlide, Limit: 1000, Period: time.Hour}
	now := time.Now().UnixNano()
	for s := secs; s >= 0; s-- {
		_, err := n.store.Decide([]byte(key), p, now-int64(s)*int64(time.Second), 1, false)
		require.NoError(t, err)
	}
}

// peerField returns field of the slave line naming peer in n's INFO replication.
func peerField(t *testing.T, n *testNode, peer, field string) int64 {
	t.Helper()
	for _, p := range n.srv.infoReplication() {
		v, ok := p.Val.(string)
		if !ok || !bytes.Contains([]byte(v), []byte("name="+peer+",")) {
			continue
		}
		for _, kv := range bytes.Split([]byte(v), []byte(",")) {
			if k, val, _ := bytes.Cut(kv, []byte("=")); string(k) == field {
				x, err := strconv.ParseInt(string(val), 10, 64)
				require.NoError(t, err)
				return x
			}
		}
	}
	t.Fatalf("%s lists no %s for %s", n.name, field, peer)
	return 0
}

// TestReplicaDeltaMissShipsWhole: a key with many counters ships as deltas
// that its copy completes; when the backup has lost the copy, it names the
// key in its reply, and the primary ships the key whole next interval.
func TestReplicaDeltaMissShipsWhole(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k"), replicas: true})
	a := nodes[0]
	key, _ := keyOwnedBy(t, nodes, a, "delta:")
	_, b := backupOf(nodes, a, key)
	decideOver(t, a, key, 30)
	require.Eventually(t, func() bool { return sameEntry(a.store, b.copies, key) }, deadline, 5*time.Millisecond)
	misses := peerField(t, a, b.name, "delta_misses")
	assert.Equal(t, int64(1), peerField(t, a, b.name, "deltas"))

	decideOver(t, a, key, 0) // the newest second's counter: a delta
	require.Eventually(t, func() bool { return sameEntry(a.store, b.copies, key) }, deadline, 5*time.Millisecond)
	assert.Equal(t, misses, peerField(t, a, b.name, "delta_misses"), "the copy completed the delta")

	require.True(t, b.copies.Delete([]byte(key)))
	decideOver(t, a, key, 0)
	require.Eventually(t, func() bool { return sameEntry(a.store, b.copies, key) }, deadline, 5*time.Millisecond,
		"the key is shipped whole after its delta missed")
	assert.Greater(t, peerField(t, a, b.name, "delta_misses"), misses)
	info, err := newClient(t, b.addr, 2).Info(context.Background(), "replication").Result()
	require.NoError(t, err)
	assert.NotEqual(t, "0", infoField(info, "rl_copies_deltas_missed"))
}

// oldBackup stands for a backup from before deltas: it sends RL.PEER DELTA
// under another name, which the backup refuses as a node that does not
// know it does.
type oldBackup struct {
	cluster.Forwarder
}

func (o oldBackup) Send(addr string, lane uint64, payload []byte, n int, r cluster.Replier) {
	o.Forwarder.Send(addr, lane, bytes.Replace(payload, []byte("$5\r\nDELTA\r\n"), []byte("$5\r\nDELTX\r\n"), 1), n, r)
}

func (o oldBackup) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	return o.Forwarder.Forward(ctx, addr, cmds)
}

// TestReplicaOldBackupGetsWholeEntries: a backup that refuses RL.PEER
// DELTA gets a full sync and whole entries from then on, and its copies
// still follow the primary.
func TestReplicaOldBackupGetsWholeEntries(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k"), replicas: true,
		wrapShip: func(f cluster.Forwarder) cluster.Forwarder { return oldBackup{f} }})
	a := nodes[0]
	key, _ := keyOwnedBy(t, nodes, a, "old:")
	_, b := backupOf(nodes, a, key)
	decideOver(t, a, key, 30)
	require.Eventually(t, func() bool { return peerField(t, a, b.name, "deltas") == 0 }, deadline, 5*time.Millisecond,
		"the refusal turns deltas off")
	for range 3 {
		decideOver(t, a, key, 0)
		require.Eventually(t, func() bool { return sameEntry(a.store, b.copies, key) }, deadline, 5*time.Millisecond)
	}
	assert.Equal(t, int64(0), peerField(t, a, b.name, "delta_misses"))
}
