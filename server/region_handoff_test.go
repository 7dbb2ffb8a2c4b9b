package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestRegionHandoffTakesOldOwnersUnits: eu is node1 alone, then node0
// joins and some slots move to it with node1 alive; us is one server.
// node1's syncs are the test's (its --region-sync is an hour: the test
// calls SyncOnce): each key is first admitted once and synced, then
// node1's syncs stop and it admits each key up to its reserve, φ = 25 of
// L = 100, which neither its key store's copy nor us has. After the
// handoff, node0 (eu's gateway now) takes the keys it gained from what
// node1 holds (an RL.PEER REGION pull): node0's count of a key includes
// node1's 25, and node0 and us together admit the rest of L, the window
// within the bound of two regions, L + e = 105. Before, node0 knew only
// the copy's and us's 1 unit: it and us admitted 99 more on top of node1's
// 25, 124 (the bound's max(e, φ) per move allowed it).
func TestRegionHandoffTakesOldOwnersUnits(t *testing.T) {
	secret := []byte("region handoff test")
	lnUS, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	regionCfg := func(name, peer, addr string, sync time.Duration) *RegionConfig {
		p := cluster.NewPeers(cluster.PeersConfig{Name: name, Secret: secret, Conns: 1, Timeout: 300 * time.Millisecond})
		t.Cleanup(p.Close)
		return &RegionConfig{Name: name, Peers: []RegionPeer{{Name: peer, Addr: addr}}, Secret: secret,
			Sync: sync, Timeout: 300 * time.Millisecond, Forwarder: p}
	}
	old := startTestNode(t, "node1", nil, clusterOpts{secret: secret, config: func(c *Config) {
		c.Region = regionCfg("eu", "us", lnUS.Addr().String(), time.Hour) // the test syncs it
	}})
	waitOwners(t, []*testNode{old}, 1)
	us := newTestServer(t, Config{Listener: lnUS, Region: regionCfg("us", "eu", old.addr, 20*time.Millisecond)})
	usRDB := redis.NewClient(&redis.Options{Addr: serveTest(t, us), Protocol: 2})
	oldRDB := redis.NewClient(&redis.Options{Addr: old.addr, Protocol: 2})
	t.Cleanup(func() { _ = usRDB.Close(); _ = oldRDB.Close() })

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // node1's syncs, until stopped
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond): // the pace of its syncs, not an ordering
			}
			old.srv.reg.SyncOnce()
		}
	}()
	ctx := context.Background()
	for _, c := range []*redis.Client{oldRDB, usRDB} {
		require.Eventually(t, func() bool {
			inf, err := c.Info(ctx, "regions").Result()
			return err == nil && strings.Contains(inf, "rl_region_recovered:1") && strings.Contains(inf, "state=up")
		}, deadline, 10*time.Millisecond, "node1's and us's links up, each recovered")
	}
	ask := func(c *redis.Client, k string) bool {
		v, err := c.Do(ctx, "RL.FIXED", k, 100, regionWindow).Slice()
		require.NoError(t, err)
		return v[0].(int64) == 1
	}
	keys := testKeys("hand:", 16)
	for _, k := range keys { // node1 gains each key's slot (us echoes), admits it once, and syncs it
		require.Eventually(t, func() bool { return ask(oldRDB, k) }, deadline, 5*time.Millisecond, "node1 admits %s", k)
	}
	require.Eventually(t, func() bool {
		return strings.Contains(regionInfoOf(t, usRDB), fmt.Sprintf("rl_region_keys:%d\r\n", len(keys)))
	},
		deadline, 10*time.Millisecond, "us has node1's first unit of every key")
	close(stop)
	<-stopped
	for _, k := range keys {
		n := 1
		for ask(oldRDB, k) {
			n++
		}
		require.Equal(t, 25, n, "%s: node1 admits up to its reserve with no acknowledgement", k)
	}

	joiner := startTestNode(t, "node0", []string{old.ml.GossipAddr()}, clusterOpts{secret: secret, config: func(c *Config) {
		c.Region = regionCfg("eu", "us", lnUS.Addr().String(), 20*time.Millisecond)
	}})
	nodes := []*testNode{joiner, old}
	waitOwners(t, nodes, 2)
	waitSettled(t, nodes)
	var moved []string
	for _, k := range keys {
		if ownerOf(nodes, k) == joiner && len(moved) < 4 {
			moved = append(moved, k)
		}
	}
	require.NotEmpty(t, moved, "some keys moved to node0")
	newRDB := redis.NewClient(&redis.Options{Addr: joiner.addr, Protocol: 2})
	t.Cleanup(func() { _ = newRDB.Close() })

	until := time.Now().Add(deadline)
	var wg sync.WaitGroup
	got := make([][2]atomic.Int64, len(moved))
	for j, k := range moved {
		for i, c := range []*redis.Client{newRDB, usRDB} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// 150 asks, past the limit; then on until the key's total
				// reaches L (node0 waits for its gain's pull and us's echo).
				for n := 0; n < 150 || 25+got[j][0].Load()+got[j][1].Load() < 100 && time.Now().Before(until); n++ {
					v, err := c.Do(ctx, "RL.FIXED", k, 100, regionWindow).Slice()
					if err == nil && v[0].(int64) == 1 {
						got[j][i].Add(1)
					}
					time.Sleep(2 * time.Millisecond) // the clients' pace, not an ordering
				}
			}()
		}
	}
	wg.Wait()
	for j, k := range moved {
		total := 25 + got[j][0].Load() + got[j][1].Load()
		t.Logf("%s: node1 25 before the move, then node0 %d and us %d: %d of L 100 (bound L + e = 105)", k, got[j][0].Load(), got[j][1].Load(), total)
		assert.LessOrEqual(t, total, int64(105), "%s: the bound of two regions, with no term for the move", k)
		assert.GreaterOrEqual(t, total, int64(97), "%s: the budget is not wasted", k)
	}
	inf := regionInfoOf(t, newRDB)
	assert.NotContains(t, inf, "rl_region_taken:0\r\n", "node0 took what node1 held")
	assert.NotContains(t, regionInfoOf(t, oldRDB), "rl_region_handed:0\r\n", "node1 answered the pulls")
}
