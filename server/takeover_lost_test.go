package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLostSlotsNotServed: when a slot's owner and its backup die together
// (both on the minority side of a 3/2 split, or killed at once), no
// survivor holds the slot's state. The survivor the table now names used
// to serve it from nothing after the takeover's wait: a key at its limit
// admitted its limit again. Now the slot is lost there: its keys are
// answered -CLUSTERDOWN, RL.CLUSTER INFO counts it, and it is served again,
// from what is left, once an operator forgets both members. A key of the
// same dead owner whose backup survived stays at its limit.
func TestLostSlotsNotServed(t *testing.T) {
	nodes := startTestCluster(t, 5, clusterOpts{secret: []byte("k"), replicas: true})
	ctx := context.Background()
	owner, backup := nodes[3], nodes[4]
	lost, kept := lostAndKeptKeys(nodes, owner, backup)
	rdb := newClient(t, nodes[0].addr, 2)
	for _, key := range []string{lost, kept} {
		// Use the key up: ask until it is denied. A forward may fail while
		// the new cluster settles (under -race in CI, to node3 once).
		require.Eventually(t, func() bool {
			rep, err := rdb.Do(ctx, "RL.SLIDE", key, 5, 3600).Int64Slice()
			return err == nil && rep[0] == 0
		}, deadline, 5*time.Millisecond, "%s used up", key)
		_, b := backupOf(nodes, nodes[0], key)
		require.Eventually(t, func() bool { return sameEntry(owner.store, b.copies, key) }, deadline, 5*time.Millisecond)
	}
	for _, n := range []*testNode{owner, backup} {
		n.ml.Kill()
		_ = n.srv.Close()
	}
	live := nodes[:3]
	waitOwners(t, live, 3)

	var rep []int64
	require.Eventually(t, func() bool {
		var err error
		rep, err = rdb.Do(ctx, "RL.SLIDE", kept, 5, 3600).Int64Slice()
		return err == nil
	}, deadline, 10*time.Millisecond, "%s is served by its backup", kept)
	assert.Equal(t, int64(0), rep[0], "%s: still at its limit on its backup", kept)

	// The lost key's new owner has no copy: it must not start it afresh.
	// Asked past the takeover's wait, it still answers as down.
	newOwner := ownerOf(live, lost)
	require.Eventually(t, func() bool {
		cn := newOwner.srv
		return cn.ho.Takeover().Waiting(cn.ho.Lease().Now()) == 0 && cn.ho.Serving()
	}, deadline, 10*time.Millisecond, "the takeover's wait passes")
	err := rdb.Do(ctx, "RL.SLIDE", lost, 5, 3600).Err()
	require.Error(t, err, "%s: its owner and backup are dead", lost)
	assert.True(t, strings.HasPrefix(err.Error(), "CLUSTERDOWN"), "%s: %v, want CLUSTERDOWN", lost, err)
	info := clusterInfo(t, newOwner)
	assert.NotEqual(t, "0", info["lost_slots"], "RL.CLUSTER INFO lost_slots")
	assert.NotEqual(t, "0", info["down_lost"], "RL.CLUSTER INFO down_lost")
	lostSlots, _ := strconv.Atoi(info["lost_slots"])
	fail, _ := strconv.Atoi(redisClusterInfo(t, newClient(t, newOwner.addr, 2))["cluster_slots_fail"])
	assert.GreaterOrEqual(t, fail, lostSlots, "CLUSTER INFO cluster_slots_fail counts the lost slots")

	for _, n := range live {
		c := newClient(t, n.addr, 1)
		for _, dead := range []*testNode{owner, backup} {
			// A node that learned the forget from another's gossip
			// answers Unknown node, and serves the slots all the same.
			if err := c.Do(ctx, "RL.CLUSTER", "FORGET", dead.name).Err(); err != nil {
				require.Equal(t, "ERR Unknown node "+dead.name, err.Error())
			}
		}
	}
	rep, err = rdb.Do(ctx, "RL.SLIDE", lost, 5, 3600).Int64Slice()
	require.NoError(t, err, "%s: served once both are forgotten", lost)
	assert.Equal(t, int64(1), rep[0], "%s: served from what is left (nothing)", lost)
	assert.Equal(t, "0", clusterInfo(t, newOwner)["lost_slots"])
}

// lostAndKeptKeys returns a key whose owner and runner-up are owner and
// backup, and one that owner owns with another runner-up.
func lostAndKeptKeys(nodes []*testNode, owner, backup *testNode) (lost, kept string) {
	for k := 0; lost == "" || kept == ""; k++ {
		key := fmt.Sprint("lost:", k)
		o, b := backupOf(nodes, nodes[0], key)
		switch {
		case o != owner:
		case b == backup && lost == "":
			lost = key
		case b != backup && kept == "":
			kept = key
		}
	}
	return lost, kept
}

// clusterInfo returns n's RL.CLUSTER INFO as strings.
func clusterInfo(t *testing.T, n *testNode) map[string]string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2})
	defer func() { _ = c.Close() }()
	vals, err := c.Do(context.Background(), "RL.CLUSTER", "INFO").Slice()
	require.NoError(t, err)
	out := map[string]string{}
	for i := 0; i+1 < len(vals); i += 2 {
		out[fmt.Sprint(vals[i])] = fmt.Sprint(vals[i+1])
	}
	return out
}

// TestLostSlotsAfterJoin: a joiner's slots are backed up at once by their
// old owners, which keep what they handed over. A joiner that dies before
// its first full sync to them must not leave those slots lost: their old
// owner holds their state, and serves them from it (at their limit).
func TestLostSlotsAfterJoin(t *testing.T) {
	o := clusterOpts{secret: []byte("k"), replicas: true}
	nodes := startTestCluster(t, 3, o)
	ctx := context.Background()
	rdb := newClient(t, nodes[0].addr, 2)
	var keys []string
	for k := range 60 {
		key := fmt.Sprint("joined:", k)
		keys = append(keys, key)
		for range 3 {
			require.NoError(t, rdb.Do(ctx, "RL.SLIDE", key, 3, 3600).Err())
		}
	}
	jo := o
	jo.wrapShip = func(f cluster.Forwarder) cluster.Forwarder { return noShipping{f} }
	joiner := startTestNode(t, "node3", []string{nodes[0].ml.GossipAddr()}, jo)
	all := append(slices.Clone(nodes), joiner)
	waitOwners(t, all, 4)
	waitSettled(t, all)
	var moved []string
	for _, key := range keys {
		if owner, backup := backupOf(all, nodes[0], key); owner == joiner {
			require.Eventually(t, func() bool { return sameEntry(joiner.store, backup.copies, key) }, deadline, 5*time.Millisecond)
			moved = append(moved, key)
		}
	}
	require.NotEmpty(t, moved, "the joiner took some keys over")
	joiner.ml.Kill()
	_ = joiner.srv.Close()
	waitOwners(t, nodes, 3)
	for _, key := range moved {
		var rep []int64
		require.Eventually(t, func() bool {
			var err error
			rep, err = rdb.Do(ctx, "RL.SLIDE", key, 3, 3600).Int64Slice()
			return err == nil
		}, deadline, 10*time.Millisecond, "%s: served by its old owner, which holds its state", key)
		assert.Equal(t, int64(0), rep[0], "%s: still at its limit", key)
	}
	for _, n := range nodes {
		assert.Equal(t, "0", clusterInfo(t, n)["lost_slots"], "%s: lost slots", n.name)
	}
}
