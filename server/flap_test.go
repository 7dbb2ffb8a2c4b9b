package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flapKeys returns n keys that node0 owns and node1 backs up in full.
func flapKeys(full *cluster.Table, n int) []string {
	var keys []string
	for k := 0; len(keys) < n; k++ {
		key := fmt.Sprint("flap:", k)
		s := cluster.Slot([]byte(key))
		if b, _ := full.RunnerUp(s); full.Owner(s).Name == "node0" && b.Name == "node1" {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestFlapKeepsTheOwnersKeys: node1 loses sight of node0 for a moment
// while node0, which sees every node, goes on serving its slots. node1
// takes node0's slots it backs up, promoting its copies, and hands them
// back once node0 is in its table again. The handoff must not replace
// node0's keys with node1's copies, older by the decisions node0 made
// meanwhile (or missing, for a backup not yet seeded: the loss behind
// TestReplicaReseedsNewBackup's failure at load 20), and node1, the backup
// again, must again hold a copy of every key, the unchanged ones too.
func TestFlapKeepsTheOwnersKeys(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k"), replicas: true})
	n0, n1, n2 := nodeNamed(nodes, "node0"), nodeNamed(nodes, "node1"), nodeNamed(nodes, "node2")
	// Tables made here, as in TestReplicaOldBackupDropsCopies, with epochs
	// above any the membership makes during the test.
	epoch := n1.ml.View().Table.Epoch() + 1000
	all := []cluster.Node{{Name: n0.name, Addr: n0.addr}, {Name: n1.name, Addr: n1.addr}, {Name: n2.name, Addr: n2.addr}}
	flap, err := cluster.NewTable(epoch, all[1:])
	require.NoError(t, err)
	full, err := cluster.NewTable(epoch+1, all)
	require.NoError(t, err)
	keys := flapKeys(full, 2)
	busy, still := keys[0], keys[1]

	ctx := context.Background()
	c0 := newClient(t, n0.addr, 2)
	for range 3 {
		require.NoError(t, c0.Do(ctx, "RL.SLIDE", busy, 10, 3600).Err())
	}
	require.NoError(t, c0.Do(ctx, "RL.SLIDE", still, 10, 3600).Err())
	for _, k := range keys {
		require.Eventually(t, func() bool { return sameEntry(n0.store, n1.copies, k) }, deadline, 5*time.Millisecond,
			"node1 backs up %s", k)
	}

	n1.srv.ho.SwitchTo(&cluster.View{Self: "node1", Table: flap})
	_, ok := n1.store.Lookup([]byte(busy), policy.Route([]byte(busy)))
	require.True(t, ok, "node1 promoted its copy of %s when node0 left its table", busy)
	for _, k := range keys {
		require.Eventually(t, func() bool { return sameEntry(n1.store, n2.copies, k) }, deadline, 5*time.Millisecond,
			"node1 ships %s to node2, its backup without node0", k)
	}
	require.NoError(t, c0.Do(ctx, "RL.SLIDE", busy, 10, 3600).Err(), "node0 serves on: its table never changed")
	want, ok := n0.store.Lookup([]byte(busy), policy.Route([]byte(busy)))
	require.True(t, ok)

	n1.srv.ho.SwitchTo(&cluster.View{Self: "node1", Table: full})
	require.Eventually(t, func() bool {
		_, held := n1.store.Lookup([]byte(busy), policy.Route([]byte(busy)))
		in, out := n1.srv.ho.Moving()
		return !held && in+out == 0
	}, deadline, 5*time.Millisecond, "node1 hands node0's slots back")
	got, ok := n0.store.Lookup([]byte(busy), policy.Route([]byte(busy)))
	require.True(t, ok, "node0 still holds %s", busy)
	assert.Equal(t, fmt.Sprint(want.Counters, want.State), fmt.Sprint(got.Counters, got.State),
		"node0 keeps the decision it made while node1 did not see it")
	for _, k := range keys {
		require.Eventually(t, func() bool { return sameEntry(n0.store, n1.copies, k) }, deadline, 5*time.Millisecond,
			"node1 backs up %s again", k)
		require.Eventually(t, func() bool {
			_, ok := n2.copies.Lookup([]byte(k), policy.Route([]byte(k)))
			return !ok
		}, deadline, 5*time.Millisecond, "node2, node1's backup of %s during the flap only, drops its copy", k)
	}
}
