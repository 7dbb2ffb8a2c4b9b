package server

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterToolSubcommands calls the CLUSTER subcommands tools use, with
// go-redis's typed calls where it has them, against a 2-node cluster:
// each answers as Redis 7's, with its errors.
func TestClusterToolSubcommands(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	ctx := ctxT(t)
	c0 := newClient(t, nodes[0].addr, 3)
	slot := -1
	var mine []string
	for i := 0; len(mine) < 3; i++ { // three keys of node1's in one slot, set through node0
		k := fmt.Sprintf("{t%d}:", i)
		if ownerOf(nodes, k).name != "node1" {
			continue
		}
		slot = cluster.Slot([]byte(k))
		for j := range 3 {
			mine = append(mine, fmt.Sprint(k, j))
			require.NoError(t, c0.Do(ctx, "RL.SLIDE", mine[j], 5, 60).Err())
		}
	}
	c1 := newClient(t, nodes[1].addr, 3)
	n, err := c1.ClusterCountKeysInSlot(ctx, slot).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "the owner counts the slot's keys")
	n, err = c0.ClusterCountKeysInSlot(ctx, slot).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "node0 holds none of them")
	keys, err := c1.ClusterGetKeysInSlot(ctx, slot, 2).Result()
	require.NoError(t, err)
	assert.Len(t, keys, 2)
	assert.Subset(t, mine, keys)
	keys, err = c1.ClusterGetKeysInSlot(ctx, slot, 0).Result()
	require.NoError(t, err)
	assert.Empty(t, keys)

	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"CLUSTER", "COUNTKEYSINSLOT", 16384}, "ERR Invalid slot"},
		{[]any{"CLUSTER", "COUNTKEYSINSLOT", -1}, "ERR Invalid slot"},
		{[]any{"CLUSTER", "COUNTKEYSINSLOT", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"CLUSTER", "GETKEYSINSLOT", 0, -1}, "ERR Invalid slot or number of keys"},
		{[]any{"CLUSTER", "GETKEYSINSLOT", 99999, 1}, "ERR Invalid slot or number of keys"},
		{[]any{"CLUSTER", "GETKEYSINSLOT", 0, "x"}, "ERR value is not an integer or out of range"},
		{[]any{"CLUSTER", "REPLICAS", "abc"}, "ERR Unknown node abc"},
		{[]any{"CLUSTER", "SLAVES", "abc"}, "ERR Unknown node abc"},
	} {
		assert.EqualError(t, c0.Do(ctx, tc.args...).Err(), tc.want, "%v", tc.args)
	}

	id, err := c0.ClusterMyID(ctx).Result()
	require.NoError(t, err)
	for _, sub := range []string{"REPLICAS", "SLAVES"} {
		reps, err := c0.Do(ctx, "CLUSTER", sub, id).Slice()
		require.NoError(t, err)
		assert.Empty(t, reps, "CLUSTER %s: no node has Redis replicas", sub)
	}

	links, err := c0.ClusterLinks(ctx).Result()
	require.NoError(t, err)
	require.Len(t, links, 1, "node0 forwarded to node1")
	assert.Equal(t, redis.ClusterLink{Direction: "to", Node: route.NodeID("node1"), CreateTime: links[0].CreateTime, Events: "rw"}, links[0])
	assert.Positive(t, links[0].CreateTime)

	info, err := c0.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	assert.Regexp(t, `cluster_stats_messages_sent:[1-9]\d*\r\n`, info, "node0 forwarded node1's keys")
	info, err = c1.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	assert.Regexp(t, `cluster_stats_messages_received:[1-9]\d*\r\n`, info)

	_, addr := startServer(t, Config{})
	assert.EqualError(t, newClient(t, addr, 2).ClusterCountKeysInSlot(ctx, 0).Err(), "ERR This instance has cluster support disabled")
}
