package server

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterSlotsSmall: with three nodes CLUSTER SLOTS lists a few hundred
// ranges in slot order, under 64 KB (per-slot hashing made it 10,806
// ranges, 1 MB), and a client reads every slot from it.
func TestClusterSlotsSmall(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	v := nodes[0].srv.ho.View()
	//lint:ignore SA1019 CLUSTER SLOTS is deprecated in Redis 7 but older cluster-aware clients still send it
	slots, err := newClient(t, nodes[0].addr, 2).ClusterSlots(ctx).Result()
	require.NoError(t, err)
	t.Logf("3 nodes: %d ranges", len(slots))
	next := 0
	for _, s := range slots {
		require.Equal(t, next, int(s.Start), "ranges in slot order, none missing")
		owner := v.Table.Owner(int(s.Start))
		assert.Equal(t, owner.Addr, s.Nodes[0].Addr, "slot %d", s.Start)
		assert.Equal(t, owner.Name, v.Table.Owner(int(s.End)).Name)
		next = int(s.End) + 1
	}
	assert.Equal(t, cluster.Slots, next)
}

// TestClusterSlotsRedis7Entries: each node entry has Redis 7's four
// elements, ip, port, id and a map of metadata (empty: no hostname), as a
// RESP2 array or a RESP3 map, like redis-server 7's reply.
func TestClusterSlotsRedis7Entries(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	for _, resp := range []int{2, 3} {
		rows, err := newClient(t, nodes[1].addr, resp).Do(ctx, "CLUSTER", "SLOTS").Slice()
		require.NoError(t, err)
		require.NotEmpty(t, rows)
		for _, row := range rows {
			entry := row.([]any)[2].([]any)
			require.Len(t, entry, 4, "RESP%d: %v", resp, entry)
			assert.Len(t, entry[2], 40)
			if resp == 3 {
				assert.Equal(t, map[any]any{}, entry[3])
			} else {
				assert.Equal(t, []any{}, entry[3])
			}
		}
		shards, err := newClient(t, nodes[1].addr, resp).Do(ctx, "CLUSTER", "SHARDS").Slice()
		require.NoError(t, err)
		assert.Len(t, shards, 2, "RESP%d", resp)
	}
}

// TestClusterNodesBusPortAndEpochs: CLUSTER NODES names each member as
// ip:port@cport with its gossip port as the bus port (not its RESP port,
// and no node name where Redis puts a hostname), each with a config epoch
// of its own, derived from the known member set so that every node gives
// the same; a join gives the new member a higher one and changes no
// other's.
func TestClusterNodesBusPortAndEpochs(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	rdb := newClient(t, nodes[0].addr, 2)
	before := clusterNodesLines(t, rdb.ClusterNodes(ctx).Val())
	nodes = append(nodes, startTestNode(t, "node2", []string{nodes[0].ml.GossipAddr()}, clusterOpts{secret: []byte("k")}))
	waitOwners(t, nodes, 3)
	after := clusterNodesLines(t, rdb.ClusterNodes(ctx).Val())
	require.Len(t, after, 3)
	epochs := map[uint64]bool{}
	for _, n := range nodes {
		l, ok := after[route.NodeID(n.name)]
		require.True(t, ok, n.name)
		_, gport, _ := net.SplitHostPort(n.ml.GossipAddr())
		assert.Equal(t, n.addr+"@"+gport, l[1], "%s's address and bus port", n.name)
		e, err := strconv.ParseUint(l[6], 10, 64)
		require.NoError(t, err)
		assert.False(t, epochs[e], "%s's config epoch %d is another's", n.name, e)
		epochs[e] = true
		if b, ok := before[route.NodeID(n.name)]; ok {
			assert.Equal(t, b[6], l[6], "a join changes %s's config epoch", n.name)
			assert.Less(t, b[6], after[route.NodeID("node2")][6])
		}
	}
	epochsOf := func(lines map[string][]string) map[string]string {
		out := map[string]string{}
		for id, l := range lines {
			out[id] = l[6]
		}
		return out
	}
	for _, n := range nodes[1:] {
		c := newClient(t, n.addr, 2)
		assert.Eventually(t, func() bool {
			return assert.ObjectsAreEqual(epochsOf(after), epochsOf(clusterNodesLines(t, c.ClusterNodes(ctx).Val())))
		}, deadline, 10*time.Millisecond, "%s gives the config epochs node0 gives", n.name)
	}
	info := rdb.ClusterInfo(ctx).Val()
	assert.Contains(t, info, "cluster_my_epoch:"+after[route.NodeID("node0")][6]+"\r\n")
	assert.Contains(t, info, "cluster_current_epoch:"+after[route.NodeID("node2")][6]+"\r\n")
}

// clusterNodesLines splits CLUSTER NODES' text by node ID.
func clusterNodesLines(t *testing.T, txt string) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(txt), "\n") {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 8, line)
		out[f[0]] = f
	}
	return out
}
