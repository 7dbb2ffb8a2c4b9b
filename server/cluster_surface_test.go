package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterSurfaceAfterDeaths: Redis Cluster's introspection tells what
// node0 knows as its peers die. node2 dies: the majority (node0, node1)
// confirms it, so node0 lists it as "fail", disconnected, with no slots,
// and serves (cluster_state:ok, every slot ok once the takeover's wait
// has passed). node1 dies too: node0 holds one of three known members, no
// majority, so it lists node1 as "fail?" (declared dead, not confirmed),
// still owning its slots (pfail), stops serving its own (fail), and says
// cluster_state:fail; a keyed command is answered -CLUSTERDOWN. Through
// it all the config epochs stay distinct and never go back.
func TestClusterSurfaceAfterDeaths(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	ctx := context.Background()
	rdb := newClient(t, nodes[0].addr, 2)
	epochs := map[string]uint64{}
	noteEpochs := func(lines map[string][]string) {
		seen := map[uint64]string{}
		for id, l := range lines {
			e, err := strconv.ParseUint(l[6], 10, 64)
			require.NoError(t, err, l)
			assert.GreaterOrEqual(t, e, epochs[id], "%s's config epoch went back", id)
			assert.Empty(t, seen[e], "%s's config epoch %d is %s's too", id, e, seen[e])
			epochs[id], seen[e] = e, id
		}
	}
	noteEpochs(clusterNodesLines(t, rdb.ClusterNodes(ctx).Val()))
	id1, id2 := route.NodeID(nodes[1].name), route.NodeID(nodes[2].name)

	kill(nodes[2])
	var lines map[string][]string
	require.Eventually(t, func() bool {
		lines = clusterNodesLines(t, rdb.ClusterNodes(ctx).Val())
		info := redisClusterInfo(t, rdb)
		return lines[id2][2] == "master,fail" && info["cluster_state"] == "ok" && info["cluster_slots_ok"] == "16384"
	}, deadline, 10*time.Millisecond, "node2's death confirmed, its slots served")
	noteEpochs(lines)
	assert.Equal(t, "disconnected", lines[id2][7])
	assert.Len(t, lines[id2], 8, "node2 owns no slot")
	assert.Equal(t, "master", lines[id1][2])

	kill(nodes[1])
	var info map[string]string
	require.Eventually(t, func() bool {
		lines = clusterNodesLines(t, rdb.ClusterNodes(ctx).Val())
		info = redisClusterInfo(t, rdb)
		return lines[id1][2] == "master,fail?" && info["cluster_state"] == "fail"
	}, deadline, 10*time.Millisecond, "node1 declared dead, node0 without its quorum")
	noteEpochs(lines)
	assert.Equal(t, "disconnected", lines[id1][7])
	assert.Greater(t, len(lines[id1]), 8, "node1 keeps its slots: no majority confirms its death")
	assert.Equal(t, "master,fail", lines[id2][2])
	counts := nodes[0].ml.View().Table.Count() // node0's, then node1's
	require.Len(t, counts, 2)
	assert.Equal(t, map[string]string{"ok": "0", "pfail": strconv.Itoa(counts[1]), "fail": strconv.Itoa(counts[0])},
		map[string]string{"ok": info["cluster_slots_ok"], "pfail": info["cluster_slots_pfail"], "fail": info["cluster_slots_fail"]})
	assert.Equal(t, "16384", info["cluster_slots_assigned"])
	var key string
	for _, k := range testKeys("surface:", 100) {
		if ownerOf(nodes, k) == nodes[0] {
			key = k
			break
		}
	}
	require.NotEmpty(t, key)
	err := rdb.Do(ctx, "RL.SLIDE", key, 5, 60).Err()
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "CLUSTERDOWN"), "%s: %v, want CLUSTERDOWN", key, err)
}

// kill stops n as kill -9 would: no leave, no handoff.
func kill(n *testNode) {
	n.ml.Kill()
	_ = n.srv.Close()
}

// redisClusterInfo returns CLUSTER INFO's fields.
func redisClusterInfo(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	txt, err := c.ClusterInfo(context.Background()).Result()
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(txt), "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		out[k] = v
	}
	return out
}
