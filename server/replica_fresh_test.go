package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// cutShipping is a shipping transport that fails every shipment while cut
// is set: the link from the owner to its backups is down for shipments
// only, and gossip, leases and forwarding go on (red-team R2's cut, in
// one process).
type cutShipping struct {
	cluster.Forwarder
	cut *atomic.Bool
}

func (c cutShipping) Send(addr string, lane uint64, payload []byte, n int, r cluster.Replier) {
	if c.cut.Load() {
		r.Replies(nil, errors.New("shipping cut"))
		return
	}
	c.Forwarder.Send(addr, lane, payload, n, r)
}

func (c cutShipping) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	if c.cut.Load() {
		return nil, errors.New("shipping cut")
	}
	return c.Forwarder.Forward(ctx, addr, cmds)
}

// TestReplicaStaleBackupStopsServing: an owner whose shipments stop
// reaching the slot's backup stops serving the slot once the backup is
// MaxLag behind (-CLUSTERDOWN, counted as down_backup), and when the owner
// then dies the backup serves the key from its copy: what it promotes
// lacks only the decisions of that last MaxLag. Before, the owner served
// on (here: used the key up) and the backup took it over from copies as
// old as the cut, so the key admitted its limit again (red-team R2,
// TestRedStaleBackup with processes).
func TestReplicaStaleBackupStopsServing(t *testing.T) {
	const limit, before = 20, 3
	var cut atomic.Bool
	o := clusterOpts{secret: []byte("k"), replicas: true,
		config: func(c *Config) { c.Cluster.Replicas.MaxLag = 300 * time.Millisecond }}
	nodes := startTestCluster(t, 2, o)
	vo := o
	vo.wrapShip = func(f cluster.Forwarder) cluster.Forwarder { return cutShipping{f, &cut} }
	nodes = append(nodes, startTestNode(t, "node2", []string{nodes[0].ml.GossipAddr()}, vo))
	waitOwners(t, nodes, 3)
	waitSettled(t, nodes)
	victim := nodes[2]
	ctx := context.Background()
	var key, other string
	for k := 0; key == "" || other == ""; k++ {
		switch owner, _ := backupOf(nodes, nodes[0], fmt.Sprint("stale:", k)); owner {
		case victim:
			key = fmt.Sprint("stale:", k)
		case nodes[0]:
			other = fmt.Sprint("stale:", k)
		}
	}
	_, backup := backupOf(nodes, nodes[0], key)
	rv := newClient(t, victim.addr, 2)
	// With a MaxLag of 300 ms a loaded host (CI's -race on two cores) can
	// hold an acknowledgement back that long before the cut too: the owner
	// then answers -CLUSTERDOWN without deciding, and a client asks again.
	for range before {
		require.Eventually(t, func() bool { return rv.Do(ctx, "RL.SLIDE", key, limit, 3600).Err() == nil }, deadline, 20*time.Millisecond,
			"the owner serves the key before the cut")
	}
	require.Eventually(t, func() bool { return sameEntry(victim.store, backup.copies, key) }, deadline, 5*time.Millisecond,
		"the backup holds the key's copy")

	cut.Store(true)
	during := 0
	require.Eventually(t, func() bool {
		rep, err := rv.Do(ctx, "RL.SLIDE", key, limit, 3600).Int64Slice()
		if err != nil {
			return err.Error() == "CLUSTERDOWN The cluster is down"
		}
		if rep[0] == 1 {
			during++
		}
		return false
	}, deadline, 100*time.Millisecond, "the owner stops serving a slot whose backup has not acknowledged its changes for MaxLag")
	t.Logf("admitted %d of %d by the owner after the cut, before it stopped serving the key", during, limit-before)
	assert.Less(t, during, limit-before, "the owner stopped before it used the key up")
	assert.Positive(t, victim.srv.ho.Probe().Downs("backup"), "counted as down_backup")
	r0 := newClient(t, nodes[0].addr, 2)
	assert.Eventually(t, func() bool { return r0.Do(ctx, "RL.SLIDE", other, limit, 3600).Err() == nil }, deadline, 20*time.Millisecond,
		"a node whose shipments flow serves its slots")

	victim.ml.Kill()
	_ = victim.srv.Close()
	waitOwners(t, nodes[:2], 2)
	rb := newClient(t, backup.addr, 2)
	require.Eventually(t, func() bool {
		return rb.Do(ctx, "RL.SLIDE", key, limit, 3600, "PEEK").Err() == nil
	}, deadline, 10*time.Millisecond, "the backup serves the dead owner's key")
	after := 0
	for {
		// The backup now owns the slot and ships to a backup of its own
		// within the same MaxLag: on a loaded host it too can answer
		// -CLUSTERDOWN without deciding, and a client asks again.
		var rep []int64
		require.Eventually(t, func() bool {
			var err error
			rep, err = rb.Do(ctx, "RL.SLIDE", key, limit, 3600).Int64Slice()
			return err == nil
		}, deadline, 20*time.Millisecond, "the backup decides on the dead owner's key")
		if rep[0] == 0 {
			break
		}
		after++
	}
	t.Logf("admitted %d before the cut, %d after it, %d by the backup after the owner's death", before, during, after)
	assert.Equal(t, limit-before, after, "the backup promoted the copy it held at the cut: it lacks only what the owner decided within MaxLag")
}
