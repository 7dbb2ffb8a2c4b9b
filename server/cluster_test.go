package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterSharedLimit(t *testing.T) {
	for _, n := range []int{3, 10} {
		t.Run(fmt.Sprint(n, " nodes"), func(t *testing.T) {
			if n == 10 && (testing.Short() || clusterUnderRace) {
				t.Skip("10 nodes: not in -short or under -race")
			}
			nodes := startTestCluster(t, n, clusterOpts{secret: []byte("k")})
			ctx := context.Background()
			var clients []*redis.Client
			for _, nd := range nodes {
				clients = append(clients, newClient(t, nd.addr, 2))
			}
			for k := range 20 {
				key := fmt.Sprint("user:", k)
				allowed := 0
				for i := range 15 {
					rep, err := clients[(k+i)%n].Do(ctx, "RL.SLIDE", key, 10, 3600).Int64Slice()
					require.NoError(t, err)
					allowed += int(rep[0])
				}
				assert.Equal(t, 10, allowed, "%s: one limit whichever node is asked", key)
			}
			// The table every node computes is the same.
			want := nodes[0].ml.View().Table
			for _, nd := range nodes[1:] {
				assert.Empty(t, nd.ml.View().Table.Moves(want), "%s's table", nd.name)
			}
		})
	}
}

// TestClusterPipelineOrder sends one pipeline mixing every keyed command,
// on keys of every owner, with keyless commands between, and checks that
// each reply is the one its command gets, in order.
func TestClusterPipelineOrder(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := newClient(t, nodes[0].addr, proto)
		pipe := rdb.Pipeline()
		type check func(v any) bool
		var checks []check
		for i := range 60 {
			key := fmt.Sprintf("p%d:%d", proto, i)
			lim := 1000 + i
			switch i % 6 {
			case 0:
				pipe.Do(ctx, "RL.FIXED", key, lim, 3600)
			case 1:
				pipe.Do(ctx, "RL.SLIDE", key, lim, 3600)
			case 2:
				pipe.Do(ctx, "RL.TOKEN", key, lim, 1, "1s")
			case 3:
				pipe.Do(ctx, "RL.LOG", key, lim, 60)
			case 4:
				pipe.Do(ctx, "RL.LEAKY", key, lim, 1, "1s")
			case 5:
				pipe.Do(ctx, "CL.THROTTLE", key, lim-1, 1, 60)
			}
			checks = append(checks, func(v any) bool {
				s, ok := v.([]any)
				return ok && len(s) == 5 && s[1] == int64(lim)
			})
			pipe.Do(ctx, "ECHO", key)
			checks = append(checks, func(v any) bool { return v == key })
			pipe.Do(ctx, "TYPE", key)
			kinds := []string{"fixed", "slide", "token", "log", "leaky", "token"}
			checks = append(checks, func(v any) bool { return v == kinds[i%6] })
			pipe.Do(ctx, "RL.INFO", key)
			checks = append(checks, func(v any) bool {
				return strings.Contains(fmt.Sprint(v), ownerOf(nodes, key).name)
			})
		}
		cmds, err := pipe.Exec(ctx)
		require.NoError(t, err)
		for i, c := range cmds {
			v, err := c.(*redis.Cmd).Result()
			require.NoError(t, err, "reply %d", i)
			assert.True(t, checks[i](v), "RESP%d reply %d (%v) = %v", proto, i, c.Args(), v)
		}
	}
	fwd := nodes[0].srv.rt.Stats().Forwarded
	assert.Positive(t, fwd, "node0 forwarded")
}

func TestClusterClientRoutesBySlot(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	cc := newClusterClient(t, nodes)
	ctx := context.Background()
	for k := range 30 {
		key := fmt.Sprint("cc:", k)
		allowed := 0
		for range 8 {
			rep, err := cc.Do(ctx, "RL.SLIDE", key, 5, 3600).Int64Slice()
			require.NoError(t, err)
			allowed += int(rep[0])
		}
		assert.Equal(t, 5, allowed, key)
	}
	for _, n := range nodes {
		assert.Zero(t, n.srv.rt.Stats().Forwarded, "%s forwarded: the client routes by itself", n.name)
	}
	slot, err := cc.ClusterKeySlot(ctx, "{user1000}.following").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(3443), slot)
}

func TestClusterMulti(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	var remote1, remote2 string
	for i := 0; remote1 == "" || remote2 == ""; i++ {
		k := fmt.Sprint("m", i)
		switch {
		case ownerOf(nodes, k) == nodes[0]:
		case remote1 == "":
			remote1 = k
		case ownerOf(nodes, k) != ownerOf(nodes, remote1):
			remote2 = k
		}
	}
	rdb := newClient(t, nodes[0].addr, 2)
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "RL.SLIDE", "{"+remote1+"}a", 5, 60)
		p.Do(ctx, "RL.SLIDE", "{"+remote1+"}b", 5, 60)
		return nil
	})
	require.NoError(t, err, "one owner elsewhere runs the whole transaction")
	assert.Equal(t, []int64{1, 5, 4}, must(cmds[0].(*redis.Cmd).Int64Slice())[:3])
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "RL.SLIDE", remote1, 5, 60)
		p.Do(ctx, "RL.SLIDE", remote2, 5, 60)
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CROSSSLOT")
	err = rdb.Do(ctx, "DEL", remote1, remote2).Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CROSSSLOT")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestClusterRedirect(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k"), redirect: true})
	ctx := context.Background()
	var key string
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("r", i); ownerOf(nodes, k) != nodes[0] {
			key = k
		}
	}
	err := newClient(t, nodes[0].addr, 2).Do(ctx, "RL.SLIDE", key, 5, 60).Err()
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("MOVED %d %s", cluster.Slot([]byte(key)), ownerOf(nodes, key).addr), err.Error())
}

func TestClusterCommands(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	rdb := newClient(t, nodes[1].addr, 2)
	//lint:ignore SA1019 CLUSTER SLOTS is deprecated in Redis 7 but older cluster-aware clients still send it
	slots, err := rdb.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	total := 0
	for _, s := range slots {
		total += int(s.End - s.Start + 1)
		require.Len(t, s.Nodes, 1)
	}
	assert.Equal(t, cluster.Slots, total)
	info, err := rdb.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	assert.Contains(t, info, "cluster_state:ok")
	assert.Contains(t, info, "cluster_size:3")
	infoAll, err := rdb.Info(ctx, "cluster").Result()
	require.NoError(t, err)
	assert.Contains(t, infoAll, "cluster_enabled:1")
	id, err := rdb.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	assert.Len(t, id, 40)
	txt, err := rdb.ClusterNodes(ctx).Result()
	require.NoError(t, err)
	assert.Contains(t, txt, id+" ")
	assert.Contains(t, txt, "myself,master")
	shards, err := rdb.ClusterShards(ctx).Result()
	require.NoError(t, err)
	assert.Len(t, shards, 3)
	owner, err := rdb.Do(ctx, "RL.CLUSTER", "OWNER", "somekey").Slice()
	require.NoError(t, err)
	assert.Equal(t, []any{"slot", int64(11058), "owner", ownerOf(nodes, "somekey").name}, owner[:4])
	ns, err := rdb.Do(ctx, "RL.CLUSTER", "NODES").Slice()
	require.NoError(t, err)
	assert.Len(t, ns, 3)
	require.NoError(t, rdb.ReadOnly(ctx).Err())
	require.NoError(t, rdb.ReadWrite(ctx).Err())
}

func TestPeerCommandsNeedCredentials(t *testing.T) {
	nodes := startTestCluster(t, 1, clusterOpts{secret: []byte("right")})
	ctx := context.Background()
	rdb := newClient(t, nodes[0].addr, 2)
	err := rdb.Do(ctx, "RL.HOP", 1, 2, "RL.SLIDE", "k", 5, 60).Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOPERM")
	wrong := cluster.NewPeers(cluster.PeersConfig{Name: "x", Secret: []byte("wrong")})
	defer wrong.Close()
	_, err = wrong.Forward(ctx, nodes[0].addr, [][][]byte{{[]byte("PING")}})
	assert.ErrorIs(t, err, cluster.ErrUnreachable)
	right := cluster.NewPeers(cluster.PeersConfig{Name: "x", Secret: []byte("right")})
	defer right.Close()
	reps, err := right.Forward(ctx, nodes[0].addr, [][][]byte{{[]byte("RL.HOP"), []byte("1"), []byte("2"), []byte("PING")}})
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", string(reps[0]))
}

// TestClusterPoliciesReachEveryNode: a policy set on one node is checked
// on every node, a redefinition replaces it everywhere, and a deletion
// removes it everywhere, late joiners included.
func TestClusterPoliciesReachEveryNode(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	require.NoError(t, newClient(t, nodes[1].addr, 2).Do(ctx, "RL.POLICY", "SET", "api", "SLIDE", "3", "60").Err())
	for _, n := range nodes {
		rdb := newClient(t, n.addr, 2)
		require.Eventually(t, func() bool {
			return rdb.Do(ctx, "RL.POLICY", "GET", "api").Err() == nil
		}, deadline, 10*time.Millisecond, "%s has the policy", n.name)
	}
	allowed := 0
	for i := range 6 {
		rep, err := newClient(t, nodes[i%3].addr, 2).Do(ctx, "RL.CHECK", "api", "user:1").Int64Slice()
		require.NoError(t, err)
		allowed += int(rep[0])
	}
	assert.Equal(t, 3, allowed, "one limit, whichever node checks it")
	require.NoError(t, newClient(t, nodes[2].addr, 2).Do(ctx, "RL.POLICY", "SET", "api", "SLIDE", "7", "60").Err())
	late := startTestNode(t, "late", []string{nodes[0].ml.GossipAddr()}, clusterOpts{secret: []byte("k")})
	for _, n := range append(nodes, late) {
		rdb := newClient(t, n.addr, 2)
		require.Eventually(t, func() bool {
			def, err := rdb.Do(ctx, "RL.POLICY", "GET", "api").Slice()
			return err == nil && fmt.Sprint(def) == "[SLIDE 7 60]"
		}, deadline, 10*time.Millisecond, "%s has the redefinition", n.name)
	}
	require.NoError(t, newClient(t, nodes[0].addr, 2).Do(ctx, "RL.POLICY", "DEL", "api").Err())
	for _, n := range append(nodes, late) {
		rdb := newClient(t, n.addr, 2)
		require.Eventually(t, func() bool {
			return rdb.Do(ctx, "RL.POLICY", "GET", "api").Err() == redis.Nil
		}, deadline, 10*time.Millisecond, "%s deleted it", n.name)
	}
}
