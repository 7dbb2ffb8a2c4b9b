package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeNamed returns the node called name.
func nodeNamed(nodes []*testNode, name string) *testNode {
	for _, n := range nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// backupOf returns key's owner and runner-up, as n sees them.
func backupOf(nodes []*testNode, n *testNode, key string) (*testNode, *testNode) {
	t := n.ml.View().Table
	s := cluster.Slot([]byte(key))
	b, _ := t.RunnerUp(s)
	return nodeNamed(nodes, t.Owner(s).Name), nodeNamed(nodes, b.Name)
}

// sameEntry reports whether key's state in a equals its state in b.
func sameEntry(a, b *shard.Map, key string) bool {
	k := []byte(key)
	ea, oka := a.Lookup(k, policy.Route(k))
	eb, okb := b.Lookup(k, policy.Route(k))
	return oka && okb && ea.State == eb.State && fmt.Sprint(ea.Counters) == fmt.Sprint(eb.Counters) && ea.Params == eb.Params
}

// TestReplicaCopyEqualsPrimary: after an interval, each key's copy on its
// slot's runner-up equals its state on the owner; the copies are not
// served (DBSIZE and KEYS count only owned keys); a deleted key's copy goes.
func TestReplicaCopyEqualsPrimary(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k"), replicas: true})
	ctx := context.Background()
	rdb := newClient(t, nodes[0].addr, 2)
	const keys = 60
	for k := range keys {
		for range 1 + k%4 {
			require.NoError(t, rdb.Do(ctx, "RL.SLIDE", fmt.Sprint("user:", k), 10, 3600).Err())
		}
	}
	for k := range keys {
		key := fmt.Sprint("user:", k)
		owner, backup := backupOf(nodes, nodes[0], key)
		require.NotEqual(t, owner, backup)
		require.Eventually(t, func() bool { return sameEntry(owner.store, backup.copies, key) }, deadline, 5*time.Millisecond,
			"%s: the copy on %s equals the state on %s", key, backup.name, owner.name)
	}
	var live, copies int64
	for _, n := range nodes {
		size, err := newClient(t, n.addr, 2).DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Equal(t, n.store.Len(), size, "%s: DBSIZE counts its own keys only", n.name)
		ks, err := newClient(t, n.addr, 2).Keys(ctx, "*").Result()
		require.NoError(t, err)
		assert.Len(t, ks, int(size), "%s: KEYS lists no copy", n.name)
		live += n.store.Len()
		copies += n.copies.Len()
	}
	assert.Equal(t, int64(keys), live)
	assert.Equal(t, int64(keys), copies, "one copy of each key")

	info, err := rdb.Info(ctx, "replication").Result()
	require.NoError(t, err)
	assert.Contains(t, info, "rl_replicas:1")
	assert.Contains(t, info, "connected_slaves:0\r\nrl_replicas:1\r\nrl_backups:2\r\n", "backups are no Redis replicas: CLUSTER NODES shows none")
	assert.Regexp(t, `rl_backup0:name=node\d,ip=127\.0\.0\.1,port=\d+,state=online,shipped_bytes=[1-9]\d*,`, info)
	assert.Regexp(t, `rl_backup1:name=node\d,.*,lag_ms=\d+,last_ship_ms=[1-9]\d*,full_syncs=[1-9]`, info)

	var mb strings.Builder
	nodes[0].srv.WriteMetrics(&mb)
	for _, m := range []string{`rlstore_replica_copies `, `rlstore_replica_shipped_bytes_total{peer="node1"} `,
		`rlstore_replica_lag_seconds{peer="node2"} `, `rlstore_replica_last_shipment_timestamp_seconds{peer="node1"} `,
		`rlstore_replica_synced{peer="node2"} 1`} {
		assert.Contains(t, mb.String(), m)
	}

	_, backup := backupOf(nodes, nodes[0], "user:7")
	require.NoError(t, rdb.Del(ctx, "user:7").Err())
	require.Eventually(t, func() bool {
		_, ok := backup.copies.Lookup([]byte("user:7"), []byte("user:7"))
		return !ok
	}, deadline, 5*time.Millisecond, "the delete reached the copy as a tombstone")
}

// decideKeys decides n keys named prefix and a number once each, through
// rdb, and returns them.
func decideKeys(t *testing.T, rdb *redis.Client, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for k := range n {
		key := fmt.Sprint(prefix, k)
		keys = append(keys, key)
		require.NoError(t, rdb.Do(context.Background(), "RL.SLIDE", key, 100, 3600).Err())
	}
	return keys
}

// TestReplicaReseedsNewBackup: a node that joins becomes the backup of
// some slots, and the owners seed it with a full sync of their keys there.
func TestReplicaReseedsNewBackup(t *testing.T) {
	o := clusterOpts{secret: []byte("k"), replicas: true}
	nodes := startTestCluster(t, 3, o)
	rdb := newClient(t, nodes[0].addr, 2)
	keys := decideKeys(t, rdb, "seed:", 300)
	joiner := startTestNode(t, "node3", []string{nodes[0].ml.GossipAddr()}, o)
	nodes = append(nodes, joiner)
	waitOwners(t, nodes, 4)
	seeded := 0
	for _, key := range keys {
		owner, backup := backupOf(nodes, nodes[0], key)
		if backup != joiner || owner == joiner {
			continue // the joiner's own keys move by handoff, not by replicas
		}
		seeded++
		require.Eventually(t, func() bool { return sameEntry(owner.store, joiner.copies, key) }, deadline, 5*time.Millisecond,
			"%s: the new backup holds its copy without any new decision", key)
	}
	assert.Positive(t, seeded, "the joiner backs up some of the old owners' keys")
}

// TestReplicaOldBackupDropsCopies: when a primary's table changes so that
// a node no longer backs up some of its slots, while that node's own table
// does not change (the primary briefly lost sight of a third node), the old
// backup's copies of those slots go; they used to stay there for good, one
// copy too many (TestReplicaCopyEqualsPrimary's "61 copies" under load).
func TestReplicaOldBackupDropsCopies(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k"), replicas: true})
	n0, n1, n2 := nodeNamed(nodes, "node0"), nodeNamed(nodes, "node1"), nodeNamed(nodes, "node2")
	// The tables are made here, from the nodes, not taken from node1's view,
	// which may itself lack a node for a moment on a loaded host; their
	// epochs are above any the membership makes during the test.
	epoch := n1.ml.View().Table.Epoch() + 1000
	all := []cluster.Node{{Name: n0.name, Addr: n0.addr}, {Name: n1.name, Addr: n1.addr}, {Name: n2.name, Addr: n2.addr}}
	full, err := cluster.NewTable(epoch+1, all)
	require.NoError(t, err)
	flap, err := cluster.NewTable(epoch, all[1:])
	require.NoError(t, err)
	var key string
	for k := 0; key == ""; k++ {
		s := cluster.Slot([]byte(fmt.Sprint("flap:", k)))
		if b, _ := full.RunnerUp(s); full.Owner(s).Name == "node1" && b.Name == "node0" {
			key = fmt.Sprint("flap:", k)
		}
	}
	r := n1.srv.repl
	r.OnTable(nil, &cluster.View{Self: "node1", Table: flap})
	b, _ := flap.RunnerUp(cluster.Slot([]byte(key)))
	require.Equal(t, "node2", b.Name, "without node0, node2 backs up %s", key)

	ctx := context.Background()
	require.NoError(t, newClient(t, n1.addr, 2).Do(ctx, "RL.SLIDE", key, 10, 3600).Err())
	require.Eventually(t, func() bool { return sameEntry(n1.store, n2.copies, key) }, deadline, 5*time.Millisecond,
		"node1 ships %s to node2 while node0 is out of its table", key)

	r.OnTable(nil, &cluster.View{Self: "node1", Table: full})
	require.Eventually(t, func() bool { return sameEntry(n1.store, n0.copies, key) }, deadline, 5*time.Millisecond,
		"node0 backs up %s again", key)
	require.Eventually(t, func() bool {
		_, ok := n2.copies.Lookup([]byte(key), policy.Route([]byte(key)))
		return !ok
	}, deadline, 5*time.Millisecond, "node2, which no longer backs up %s, drops its copy", key)
}

// TestReplicaShipsLargeShipments: an interval's changes, and a full sync,
// larger than a backup takes in one command (--max-request-bytes, 1 MiB by
// default) still arrive, in chunks. They used to go as one RL.PEER COPY,
// which the backup refused as a protocol error; shipping backed off to a
// full sync, whose chunks were as large, and the backup never caught up.
func TestReplicaShipsLargeShipments(t *testing.T) {
	shipsLarge(t, clusterOpts{secret: []byte("k"), replicas: true})
}

// TestReplicaShipsUnderSmallRequestCap: a client's --max-request-bytes far
// below a shipment's chunk does not hold peers' connections back.
func TestReplicaShipsUnderSmallRequestCap(t *testing.T) {
	shipsLarge(t, clusterOpts{secret: []byte("k"), replicas: true, maxRequest: 4096})
}

// shipsLarge decides 2 MiB of keys on one node and checks that every copy
// arrives, both shipped as changes and by a full sync.
func shipsLarge(t *testing.T, o clusterOpts) {
	nodes := startTestCluster(t, 3, o)
	n0 := nodeNamed(nodes, "node0")
	tbl := n0.ml.View().Table
	pad := strings.Repeat("x", 3000)
	p := window.Params{Kind: window.KindSlide, Limit: 100, Period: time.Hour}
	var keys []string
	for k := 0; len(keys) < 700; k++ { // 2 MiB of keys, decided within an interval or two
		key := fmt.Sprint("big:", k, ":", pad)
		if tbl.Owner(cluster.Slot([]byte(key))).Name == "node0" {
			keys = append(keys, key)
		}
	}
	now := time.Now().UnixNano()
	for _, key := range keys {
		_, err := n0.store.Decide([]byte(key), p, now, 1, false)
		require.NoError(t, err)
	}
	allCopied := func() bool {
		for _, key := range keys {
			if _, backup := backupOf(nodes, n0, key); !sameEntry(n0.store, backup.copies, key) {
				return false
			}
		}
		return true
	}
	require.Eventually(t, allCopied, deadline, 10*time.Millisecond, "every key's copy arrives")

	r := n0.srv.repl
	r.Flushed() // every backup is due a full sync, as after FLUSHALL
	require.Eventually(t, func() bool {
		for _, st := range r.Stats() {
			if !st.Synced || st.Fulls < 2 {
				return false
			}
		}
		return allCopied()
	}, deadline, 10*time.Millisecond, "a full sync of 2 MiB of keys ends, and leaves every copy")
}

// TestReplicaResyncsRestartedBackup: a backup that restarts sooner than
// failure detection notices comes back with no copies. Its primary has
// nothing to ship (no key changes), but hears from it every few intervals;
// whether that heartbeat fails on the old connection or reaches the new
// process on a new one, where the backup answers -RESYNC until a full sync
// has come on it, a full sync follows, and every key's copy comes back
// without a decision.
func TestReplicaResyncsRestartedBackup(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(primary, backup *testNode)
	}{
		{"old connection broken", func(_, backup *testNode) {
			n, err := newClient(t, backup.addr, 2).Do(context.Background(), "CLIENT", "KILL", "SKIPME", "yes").Int()
			require.NoError(t, err)
			require.Positive(t, n, "the primary's connections to the backup")
		}},
		{"new connection", func(primary, backup *testNode) { primary.ship.Forget(backup.addr) }},
	} {
		t.Run(tc.name, func(t *testing.T) { resyncsRestartedBackup(t, tc.cut) })
	}
}

func resyncsRestartedBackup(t *testing.T, breakConn func(primary, backup *testNode)) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k"), replicas: true})
	primary, backup := nodes[0], nodes[1]
	ctx := context.Background()
	rdb := newClient(t, primary.addr, 2)
	var keys []string // primary's, so backed up on backup
	for k := 0; len(keys) < 50; k++ {
		key := fmt.Sprint("re:", k)
		if owner, _ := backupOf(nodes, primary, key); owner != primary {
			continue
		}
		keys = append(keys, key)
		require.NoError(t, rdb.Do(ctx, "RL.SLIDE", key, 10, 3600).Err())
	}
	copied := func(why string) {
		for _, key := range keys {
			require.Eventually(t, func() bool { return sameEntry(primary.store, backup.copies, key) }, deadline, 5*time.Millisecond,
				"%s: %s", key, why)
		}
	}
	copied("copied")
	// The backup "restarts": its copies are gone, and the primary's stream
	// to it breaks, or is replaced, while idle.
	backup.copies.Flush()
	breakConn(primary, backup)
	copied("copied again, with no decision, by a full sync")
	// The primary counts the full sync once its last chunk is answered,
	// which can be just after the copies are in.
	require.Eventually(t, func() bool {
		info, err := rdb.Info(ctx, "replication").Result()
		return err == nil && regexp.MustCompile(`full_syncs=[2-9]`).MatchString(info)
	}, deadline, 5*time.Millisecond, "a second full sync")
}

// noShipping is a shipping transport that fails every shipment.
type noShipping struct{ cluster.Forwarder }

func (noShipping) Send(_ string, _ uint64, _ []byte, _ int, r cluster.Replier) {
	r.Replies(nil, errors.New("no shipping"))
}

func (noShipping) Forward(context.Context, string, [][][]byte) ([][]byte, error) {
	return nil, errors.New("no shipping")
}

// TestReplicaHandoffKeepsCopy: after a join, the old owner of each slot the
// joiner takes over is its backup, and keeps what it handed over as the
// copy at once, before (here: without) any shipment from the joiner.
func TestReplicaHandoffKeepsCopy(t *testing.T) {
	o := clusterOpts{secret: []byte("k"), replicas: true}
	nodes := startTestCluster(t, 2, o)
	rdb := newClient(t, nodes[0].addr, 2)
	keys := decideKeys(t, rdb, "kept:", 200)
	jo := o
	jo.wrapShip = func(f cluster.Forwarder) cluster.Forwarder { return noShipping{f} }
	joiner := startTestNode(t, "node2", []string{nodes[0].ml.GossipAddr()}, jo)
	nodes = append(nodes, joiner)
	waitOwners(t, nodes, 3)
	moved := 0
	for _, key := range keys {
		owner, backup := backupOf(nodes, nodes[0], key)
		if owner != joiner {
			continue
		}
		moved++
		require.Eventually(t, func() bool { return sameEntry(joiner.store, backup.copies, key) }, deadline, 5*time.Millisecond,
			"%s: its old owner %s keeps the copy of what it handed over", key, backup.name)
	}
	assert.Positive(t, moved, "the joiner took some keys over")
}
