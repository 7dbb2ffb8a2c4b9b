package server

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWaitingNodeServesNoKey: a node whose view is Waiting (given seeds,
// it has met no member yet) answers keyed commands -CLUSTERDOWN, says
// cluster_state:fail and is not ready, and serves once the view has met one.
func TestWaitingNodeServesNoKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	self := cluster.Node{Name: "a", Addr: ln.Addr().String()}
	alone, err := cluster.NewTable(1, []cluster.Node{self})
	require.NoError(t, err)
	var view atomic.Pointer[cluster.View]
	view.Store(&cluster.View{Self: "a", Table: alone, Members: []cluster.Member{{Node: self}}, Waiting: true})
	peers := cluster.NewPeers(cluster.PeersConfig{Name: "a", Secret: []byte("k"), Timeout: time.Second})
	t.Cleanup(peers.Close)
	s := newTestServer(t, Config{Listener: ln, Cluster: &ClusterConfig{View: view.Load, Forwarder: peers, Joins: true, Secret: []byte("k")}})
	c := redis.NewClient(&redis.Options{Addr: serveTest(t, s), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()

	err = c.Do(ctx, "RL.SLIDE", "k", 3, 60).Err()
	assert.EqualError(t, err, "CLUSTERDOWN The cluster is down")
	info, err := c.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	assert.Contains(t, info, "cluster_state:fail\r\n")
	assert.ErrorContains(t, s.Ready(), "has not met a member")
	assert.NoError(t, c.Ping(ctx).Err(), "keyless commands are served")

	view.Store(&cluster.View{Self: "a", Table: alone, Members: []cluster.Member{{Node: self}}})
	s.ClusterChanged()
	rep, err := c.Do(ctx, "RL.SLIDE", "k", 3, 60).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 3, 2}, rep[:3])
	assert.NoError(t, s.Ready())
}
