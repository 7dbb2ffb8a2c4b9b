package main

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegionProcessCluster: region eu is a cluster of two processes, both
// started with --region eu (docs/regions.md, "A region made of a
// cluster"), and us is one process. eu is one decider per key: clients of
// all three ask for two keys, one owned by each node of eu; a node
// forwards the other's key to its owner, which decides it with eu's
// index, and eu's gateway (p0, the lowest-named node) carries p1's
// batches to us and fans us's out by owner. So each key has two deciders,
// eu and us, whose bound L + (R−1)·e = 105 of L = 100 holds, and no
// reserve is held for a node that never decides the key: together the
// regions use the whole limit (before, with each node a decider of its
// own, each key stopped at about 86, L less the idle node's reserve).
func TestRegionProcessCluster(t *testing.T) {
	ports := map[string]string{"p0": testport.Stable(t), "p1": testport.Stable(t), "us": testport.Stable(t)}
	common := []string{"--cluster-secret", "region cluster test", "--region-sync", "50ms"}
	euArgs := func(name string) []string {
		return append([]string{"--port", ports[name], "--region", "eu", "--region-peers", "us=127.0.0.1:" + ports["us"]}, common...)
	}
	p0 := startClusterProc(t, "p0", "", euArgs("p0")...)
	p1 := startClusterProc(t, "p1", p0.gossip, euArgs("p1")...)
	for _, p := range []*clusterProc{p0, p1} {
		waitClusterSize(t, p, 2)
	}
	for _, p := range []*clusterProc{p0, p1} {
		waitHandedOver(t, p)
	}
	us := startProc(t, nil, append([]string{"--port", ports["us"], "--region", "us", "--region-peers", "eu=127.0.0.1:" + ports["p0"]}, common...)...)
	clients := []*redis.Client{newClient(t, p0.addr), newClient(t, p1.addr), newClient(t, us.Addr(t))}
	for _, c := range clients {
		require.Eventually(t, func() bool {
			inf, err := c.Info(context.Background(), "regions").Result()
			return err == nil && strings.Contains(inf, "rl_region_recovered:1") && strings.Count(inf, "state=up") == 1
		}, deadline, 20*time.Millisecond, "every node's link up (p1's through the gateway), and each recovered")
	}
	keys := []string{keyOwnedBy(t, clients[0], "p0", "g:"), keyOwnedBy(t, clients[0], "p1", "g:")}

	// Every client asks 300 times, 5 ms apart, so that the regions are at
	// the limit over many exchanges (the escrow, e = 5, is per round
	// trip); past that, until its key's total reaches 97: a node that
	// gained its slot at its first decision denies the key until us has
	// echoed, which on a loaded host may take longer than the 300. A key
	// whose budget stays wasted fails at the deadline.
	win, until := unturnedWindow(), time.Now().Add(2*deadline)
	got := make([][3]atomic.Int64, len(keys))
	var wg sync.WaitGroup
	for i, c := range clients {
		for j, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				total := func() int64 { return got[j][0].Load() + got[j][1].Load() + got[j][2].Load() }
				for n := 0; n < 300 || total() < 97 && time.Now().Before(until); n++ {
					v, err := c.Do(context.Background(), "RL.FIXED", k, 100, win).Slice()
					if err == nil && v[0].(int64) == 1 {
						got[j][i].Add(1)
					}
					time.Sleep(5 * time.Millisecond) // the clients' pace, not an ordering
				}
			}()
		}
	}
	wg.Wait()
	for j, k := range keys {
		by := [3]int64{got[j][0].Load(), got[j][1].Load(), got[j][2].Load()}
		total := by[0] + by[1] + by[2]
		t.Logf("%s: admitted via eu/p0 %d, via eu/p1 %d, via us %d: %d of L 100", k, by[0], by[1], by[2], total)
		assert.LessOrEqual(t, total, int64(105), "%s: the bound of two regions", k)
		assert.GreaterOrEqual(t, total, int64(97), "%s: the budget is not wasted", k)
	}
	inf, err := clients[1].Info(context.Background(), "regions").Result()
	require.NoError(t, err)
	assert.Contains(t, inf, "rl_regions:2")
	assert.Contains(t, inf, "rl_region_gateway:p0")
	assert.Regexp(t, regexp.MustCompile(`rl_region_windows_overshoot:0`), inf)
	inf, err = clients[0].Info(context.Background(), "regions").Result()
	require.NoError(t, err)
	assert.NotContains(t, inf, "rl_region_relayed:0", "p0, the gateway, carried p1's batches")
	t.Logf("p0's INFO regions:\n%s", inf)
}

// TestRegionNodeNameRefused: the form that made each node of a clustered
// region a decider of its own (--region eu/p0) is refused with what to
// write instead.
func TestRegionNodeNameRefused(t *testing.T) {
	_, err := load(t, []string{"--region", "eu/p0", "--region-peers", "us=127.0.0.1:7003", "--cluster-secret", "s"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--region names the region, not a node")
	assert.Contains(t, err.Error(), "eu, not eu/p0")
}

// TestRegionProcessClusterGatewayDies: eu is three processes, us one,
// whose --region-peers names p0, which is also eu's gateway. A key owned
// by p0 is used in both regions; then p0 is killed (-9). The cluster
// gives p0's slots to p1 and p2, p1 becomes the gateway, and us, whose
// link to p0 fails, sends to the next node eu's acknowledgements named.
// The key's new owner gains its slot, waits for us's echo, and the two
// regions go on sharing the limit: the window holds at most the bound
// with one change of owner, L + e + max(e, φ) = 130 of L = 100, and,
// with no state of p0's but what us had received, close to L is used.
func TestRegionProcessClusterGatewayDies(t *testing.T) {
	ports := map[string]string{"p0": testport.Stable(t), "p1": testport.Stable(t), "p2": testport.Stable(t), "us": testport.Stable(t)}
	common := []string{"--cluster-secret", "region cluster test", "--region-sync", "50ms"}
	euArgs := func(name string) []string {
		return append([]string{"--port", ports[name], "--region", "eu", "--region-peers", "us=127.0.0.1:" + ports["us"]}, common...)
	}
	p0 := startClusterProc(t, "p0", "", euArgs("p0")...)
	p1 := startClusterProc(t, "p1", p0.gossip, euArgs("p1")...)
	p2 := startClusterProc(t, "p2", p0.gossip, euArgs("p2")...)
	eu := []*clusterProc{p0, p1, p2}
	for _, p := range eu {
		waitClusterSize(t, p, 3)
	}
	for _, p := range eu {
		waitHandedOver(t, p)
	}
	us := startProc(t, nil, append([]string{"--port", ports["us"], "--region", "us", "--region-peers", "eu=127.0.0.1:" + ports["p0"]}, common...)...)
	c0, c1, cu := newClient(t, p0.addr), newClient(t, p1.addr), newClient(t, us.Addr(t))
	for _, c := range []*redis.Client{c0, c1, cu} {
		require.Eventually(t, func() bool {
			inf, err := c.Info(context.Background(), "regions").Result()
			return err == nil && strings.Contains(inf, "rl_region_recovered:1") && strings.Contains(inf, "state=up")
		}, deadline, 20*time.Millisecond, "links up, each recovered")
	}
	key, win := keyOwnedBy(t, c0, "p0", "g:"), unturnedWindow()
	var admitted atomic.Int64
	// ask asks n times, 5 ms apart, and then, until the key's total
	// reaches least, or the deadline passes.
	ask := func(c *redis.Client, n int, least int64, until time.Time) int {
		got := 0
		for i := 0; i < n || admitted.Load() < least && time.Now().Before(until); i++ {
			v, err := c.Do(context.Background(), "RL.FIXED", key, 100, win).Slice()
			if err == nil && v[0].(int64) == 1 {
				got++
				admitted.Add(1)
			}
			time.Sleep(5 * time.Millisecond) // the clients' pace, not an ordering
		}
		return got
	}
	var before [2]int
	var wg sync.WaitGroup
	for i, c := range []*redis.Client{c0, cu} {
		wg.Add(1)
		go func() { defer wg.Done(); before[i] = ask(c, 15, 0, time.Time{}) }()
	}
	wg.Wait()
	p0.Signal(t, syscall.SIGKILL)
	<-p0.Exited
	for _, p := range []*clusterProc{p1, p2} {
		waitClusterSize(t, p, 2)
	}
	require.Eventually(t, func() bool {
		inf, err := cu.Info(context.Background(), "regions").Result()
		return err == nil && strings.Contains(inf, "addr=127.0.0.1:"+ports["p1"]) && strings.Contains(inf, "state=up")
	}, deadline, 20*time.Millisecond, "us sends to p1 now")
	// After the kill, until the total reaches 95: the new owner denies
	// the key until us has echoed (wait, not assume, on a loaded host).
	var after [2]int
	until := time.Now().Add(2 * deadline)
	for i, c := range []*redis.Client{c1, cu} {
		wg.Add(1)
		go func() { defer wg.Done(); after[i] = ask(c, 300, 95, until) }()
	}
	wg.Wait()
	total := before[0] + before[1] + after[0] + after[1]
	t.Logf("%s: before the kill via p0 %d, via us %d; after, via p1 %d, via us %d: %d of L 100", key, before[0], before[1], after[0], after[1], total)
	assert.LessOrEqual(t, total, 130, "the bound with one change of owner")
	assert.GreaterOrEqual(t, total, 95, "the budget is not wasted")
	inf, err := c1.Info(context.Background(), "regions").Result()
	require.NoError(t, err)
	assert.Contains(t, inf, "rl_region_gateway:p1")
	t.Logf("p1's INFO regions:\n%s", inf)
}
