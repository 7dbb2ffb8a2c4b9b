package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNudgeAfterTableChange: a routed node-redis connection gets -MOVED
// to the key's owner at its first keyed command after the table changes,
// once; of routed go-redis connections, only the first from the client's
// host does; a plain one, or one of another library, never does.
func TestNudgeAfterTableChange(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	n0 := nodes[0]
	ctx := context.Background()
	dial := func(lib string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n0.addr, PoolSize: 1, Protocol: 2, DisableIdentity: true})
		t.Cleanup(func() { _ = c.Close() })
		if lib != "" {
			require.NoError(t, c.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", lib).Err())
		}
		return c
	}
	routed, pyRouted, plain := dial("node-redis"), dial("redis-py"), dial("node-redis")
	goRouted, goSameHost := dial("go-redis(,go1.26)"), dial("go-redis(,go1.26)")
	var own []string // keys node 0 owns, over many slots
	for i := 0; len(own) < 64; i++ {
		if k := fmt.Sprint("nudge:", i); ownerOf(nodes, k) == n0 {
			own = append(own, k)
		}
	}
	for i, k := range own {
		require.NoError(t, routed.Do(ctx, "RL.SLIDE", k, 100, 60).Err())
		require.NoError(t, pyRouted.Do(ctx, "RL.SLIDE", k, 100, 60).Err())
		require.NoError(t, goRouted.Do(ctx, "RL.SLIDE", k, 100, 60).Err())
		require.NoError(t, goSameHost.Do(ctx, "RL.SLIDE", k, 100, 60).Err())
		require.NoError(t, plain.Do(ctx, "RL.SLIDE", fmt.Sprint("plain:", i), 100, 60).Err())
	}

	joined := startTestNode(t, "n3", []string{n0.ml.GossipAddr()}, clusterOpts{secret: []byte("k")})
	waitOwners(t, append(nodes, joined), 4)
	waitSettled(t, append(nodes, joined))

	err := routed.Do(ctx, "RL.SLIDE", own[0], 100, 60).Err()
	require.Error(t, err, "the first command after the join")
	slot := cluster.Slot([]byte(own[0]))
	owner := n0.ml.View().Table.Owner(slot)
	assert.Equal(t, fmt.Sprintf("MOVED %d %s", slot, owner.Addr), err.Error())
	err = goRouted.Do(ctx, "RL.SLIDE", own[0], 100, 60).Err()
	require.Error(t, err, "go-redis's first connection from the host, after the join")
	assert.Equal(t, fmt.Sprintf("MOVED %d %s", slot, owner.Addr), err.Error())
	for _, k := range own {
		err := routed.Do(ctx, "RL.SLIDE", k, 100, 60).Err()
		if err != nil {
			assert.True(t, strings.HasPrefix(err.Error(), "MOVED ") && ownerOf(nodes, k) != n0, "%s: %v", k, err)
		}
	}
	for i, k := range own {
		assert.NoError(t, pyRouted.Do(ctx, "RL.SLIDE", k, 100, 60).Err(), "redis-py's connection")
		assert.NoError(t, goSameHost.Do(ctx, "RL.SLIDE", k, 100, 60).Err(), "go-redis's second connection from the host")
		assert.NoError(t, goRouted.Do(ctx, "RL.SLIDE", k, 100, 60).Err(), "go-redis's connection, once nudged")
		assert.NoError(t, plain.Do(ctx, "RL.SLIDE", fmt.Sprint("plain:", i), 100, 60).Err(), "a plain client")
	}
}

// TestPlainClientNotMovedAfterDeath: a plain client of one node, even one
// that says it is node-redis, sending keys of every owner, sees no -MOVED
// when a member dies.
func TestPlainClientNotMovedAfterDeath(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	rdb := redis.NewClient(&redis.Options{Addr: nodes[0].addr, PoolSize: 1, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	require.NoError(t, rdb.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", "node-redis").Err())
	send := func() {
		for i := range 300 {
			err := rdb.Do(ctx, "RL.SLIDE", fmt.Sprint("plain:", i), 1000000, 3600).Err()
			if err != nil {
				require.NotContains(t, err.Error(), "MOVED")
			}
		}
	}
	send()
	nodes[1].ml.Kill()
	_ = nodes[1].srv.Close()
	waitOwners(t, []*testNode{nodes[0], nodes[2]}, 2)
	deadlineAt := time.Now().Add(nodes[0].ml.Lease().TakeoverWait() + time.Second)
	for time.Now().Before(deadlineAt) {
		send()
	}
}

// TestDeadPeersConnectionsClosed: once a member's death is confirmed, the
// survivors close their connections to it (forward, mover and shipments'
// pools); before, each held them open (CLOSE-WAIT) for the process's life.
func TestDeadPeersConnectionsClosed(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{replicas: true})
	a, dead := nodes[0], nodes[1]
	rdb := redis.NewClient(&redis.Options{Addr: a.addr, PoolSize: 1, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	key, _ := keyOwnedBy(t, nodes, dead, "closed:")
	require.NoError(t, rdb.Do(context.Background(), "RL.SLIDE", key, 10, 3600).Err(), "forwarded to its owner")
	require.Contains(t, a.peers.Addrs(), dead.addr, "a connection to the owner")

	dead.ml.Kill()
	_ = dead.srv.Close()
	waitOwners(t, []*testNode{a, nodes[2]}, 2)
	require.Eventually(t, func() bool {
		return !slices.Contains(a.peers.Addrs(), dead.addr) && !slices.Contains(a.ship.Addrs(), dead.addr)
	}, deadline, 10*time.Millisecond, "a forgets the dead node's connections")
}
