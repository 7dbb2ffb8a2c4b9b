package client_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var gossipAddr = regexp.MustCompile(`msg="cluster: joined gossip" node=\S+ gossip=(\S+)`)

// startCluster runs n rlstore processes joined into one cluster on loopback
// and returns their RESP addresses once each sees all n members.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	_, addrs := startClusterProcs(t, n)
	return addrs
}

// startClusterProcs is startCluster that also returns the processes, each
// started with extra after the flags it sets (a later flag wins).
func startClusterProcs(t *testing.T, n int, extra ...string) ([]*rlstoretest.Proc, []string) {
	t.Helper()
	var procs []*rlstoretest.Proc
	var addrs []string
	seed := ""
	for i := range n {
		args := []string{"--port", "0", "--node-name", fmt.Sprint("c", i),
			"--cluster-addr", "127.0.0.1:0", "--cluster-timing", "fast"}
		if seed != "" {
			args = append(args, "--join", seed)
		}
		p := rlstoretest.Start(t, rlstoreBin, nil, append(args, extra...)...)
		procs = append(procs, p)
		if seed == "" {
			seed = p.WaitLog(t, gossipAddr)[1]
		}
		addrs = append(addrs, p.Addr(t))
	}
	for _, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a})
		want := fmt.Sprintf("cluster_size:%d\r\n", n)
		require.Eventually(t, func() bool {
			info, err := rdb.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, want)
		}, rlstoretest.Deadline, 10*time.Millisecond, "%s sees %d members", a, n)
		_ = rdb.Close()
	}
	return procs, addrs
}

// TestClusterClient: the typed client on a go-redis ClusterClient routes each
// key by slot and gets one shared limit per key, whichever node holds it.
func TestClusterClient(t *testing.T) {
	addrs := startCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = rdb.Close() })
	c, ctx := client.New(rdb), context.Background()

	for i := range 20 {
		key := fmt.Sprint("user:", i)
		for j := range 4 {
			d, err := c.Slide(ctx, key, 3, time.Minute)
			require.NoError(t, err, "%s call %d", key, j+1)
			assert.Equal(t, j < 3, d.Allowed, "%s call %d", key, j+1)
		}
	}
	// The same limit seen through a plain client on every node.
	for _, a := range addrs {
		one := client.New(redis.NewClient(&redis.Options{Addr: a}))
		d, err := one.Slide(ctx, "user:0", 3, time.Minute, client.Peek())
		require.NoError(t, err)
		assert.False(t, d.Allowed, "node %s sees user:0 at its limit", a)
		_ = one.Redis().Close()
	}
}
