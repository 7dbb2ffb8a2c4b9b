package main

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegionProcessCluster: region eu is a cluster of two processes, each
// a decider of its own (eu/p0, eu/p1: docs/regions.md, "A region made of a
// cluster"), and us is one process. Clients of all three ask for two keys,
// one owned by each node of eu: a node forwards the other's key to its
// owner, which decides it, so each key has two deciders (its owner in eu,
// and us), and the three deciders' bound, L + (R−1)·e = 106 of L = 100,
// holds. The decider that never decides a key (eu's other node) still
// holds its reserve φ = 16 in the others' views, so the key's total is at
// least L − φ − e once the exchanges run.
func TestRegionProcessCluster(t *testing.T) {
	ports := map[string]string{"eu/p0": freePort(t), "eu/p1": freePort(t), "us": freePort(t)}
	names := []string{"eu/p0", "eu/p1", "us"}
	args := func(name string) []string {
		var peers []string
		for _, other := range names {
			if other != name {
				peers = append(peers, other+"=127.0.0.1:"+ports[other])
			}
		}
		return []string{"--port", ports[name], "--region", name, "--region-peers", strings.Join(peers, ","),
			"--cluster-secret", "region cluster test", "--region-sync", "50ms"}
	}
	p0 := startClusterProc(t, "p0", "", args("eu/p0")...)
	p1 := startClusterProc(t, "p1", p0.gossip, args("eu/p1")...)
	for _, p := range []*clusterProc{p0, p1} {
		waitClusterSize(t, p, 2)
	}
	for _, p := range []*clusterProc{p0, p1} {
		waitHandedOver(t, p)
	}
	us := startProc(t, nil, args("us")...)
	clients := []*redis.Client{newClient(t, p0.addr), newClient(t, p1.addr), newClient(t, us.Addr(t))}
	for _, c := range clients {
		require.Eventually(t, func() bool {
			inf, err := c.Info(context.Background(), "regions").Result()
			return err == nil && strings.Contains(inf, "rl_region_recovered:1") && strings.Count(inf, "state=up") == 2
		}, deadline, 20*time.Millisecond, "every decider's links up, and each recovered")
	}
	keys := []string{keyOwnedBy(t, clients[0], "p0", "g:"), keyOwnedBy(t, clients[0], "p1", "g:")}

	var mu sync.Mutex
	got := map[string][]int{}
	var wg sync.WaitGroup
	for i, c := range clients {
		for _, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for range 300 {
					v, err := c.Do(context.Background(), "RL.FIXED", k, 100, 3600).Slice()
					if err == nil && v[0].(int64) == 1 {
						n++
					}
					time.Sleep(5 * time.Millisecond) // over many exchanges: the escrow (e = 3) is per round trip
				}
				mu.Lock()
				if got[k] == nil {
					got[k] = make([]int, 3)
				}
				got[k][i] = n
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for _, k := range keys {
		total := got[k][0] + got[k][1] + got[k][2]
		t.Logf("%s: admitted via eu/p0 %d, via eu/p1 %d, via us %d: %d of L 100", k, got[k][0], got[k][1], got[k][2], total)
		assert.LessOrEqual(t, total, 106, "%s: the bound of three deciders", k)
		assert.GreaterOrEqual(t, total, 100-16-3, "%s: the budget but the idle decider's reserve", k)
	}
	inf, err := clients[1].Info(context.Background(), "regions").Result()
	require.NoError(t, err)
	assert.Contains(t, inf, "rl_regions:3")
	assert.Regexp(t, regexp.MustCompile(`rl_region_windows_overshoot:0`), inf)
}
