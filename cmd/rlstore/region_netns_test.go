package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/internal/rlstoretest"
)

// The region netns test runs eu, us and ap in namespaces rln0-2 whose
// veths hang on a bridge rlnbr in the test's namespace, on 10.231.32.0/24
// (the bridge is .254, region i is .i+1). Regions are 50 ms apart each
// way: each namespace delays what it sends by 50 ms with tc netem where the
// kernel has it; where it has not (no sch_netem), each region's link to
// each other region goes through a delayLink in the test's namespace,
// listening on and dialling from the bridge's second address, .253. To cut
// ap off, iptables DROP inside its namespace drops every packet to or from
// eu, us and .253, while the test's clients (from .254) still reach it.
// Root only; everything is removed afterwards.
const (
	regionNet    = "10.231.32."
	regionBridge = "rlnbr"
	regionRelay  = regionNet + "253"
)

func regionNetCleanup() {
	for i := range 3 {
		_ = exec.Command("ip", "netns", "del", fmt.Sprintf("rln%d", i)).Run()
		_ = exec.Command("ip", "link", "del", fmt.Sprintf("rlnp%d", i)).Run()
	}
	_ = exec.Command("ip", "link", "del", regionBridge).Run()
}

// setupRegionNet makes the namespaces and returns each region's address,
// and whether tc netem delays them (if not, the caller relays).
func setupRegionNet(t *testing.T) ([]string, bool) {
	t.Helper()
	needNetns(t, "ip", "iptables", "tc")
	regionNetCleanup()
	t.Cleanup(regionNetCleanup)
	netnsRun(t, "ip", "link", "add", regionBridge, "type", "bridge")
	netnsRun(t, "ip", "addr", "add", regionNet+"254/24", "dev", regionBridge)
	netnsRun(t, "ip", "addr", "add", regionRelay+"/24", "dev", regionBridge)
	netnsRun(t, "ip", "link", "set", regionBridge, "up")
	var ips []string
	netem := true
	for i := range 3 {
		ns, veth, port, ip := fmt.Sprintf("rln%d", i), fmt.Sprintf("rlnv%d", i), fmt.Sprintf("rlnp%d", i), fmt.Sprintf("%s%d", regionNet, i+1)
		netnsRun(t, "ip", "netns", "add", ns)
		netnsRun(t, "ip", "link", "add", "name", veth, "netns", ns, "type", "veth", "peer", "name", port)
		netnsRun(t, "ip", "link", "set", port, "master", regionBridge, "up")
		netnsRun(t, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", veth)
		netnsRun(t, "ip", "-n", ns, "link", "set", veth, "up")
		netnsRun(t, "ip", "-n", ns, "link", "set", "lo", "up")
		if netem {
			if out, err := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", veth, "root", "netem", "delay", "50ms").CombinedOutput(); err != nil {
				t.Logf("tc netem failed (%s): this kernel lacks sch_netem; the regions' links go through 50 ms delayLinks instead", strings.TrimSpace(string(out)))
				netem = false
			}
		}
		ips = append(ips, ip)
	}
	if !netem { // one namespace may have had it: none must, or some links would be delayed twice
		for i := range 3 {
			_ = exec.Command("ip", "netns", "exec", fmt.Sprintf("rln%d", i), "tc", "qdisc", "del", "dev", fmt.Sprintf("rlnv%d", i), "root").Run()
		}
	}
	return ips, netem
}

// regionCut drops, inside ap's namespace, every packet to or from eu, us
// and the relay.
func regionCut(t *testing.T, ips []string, on bool) {
	t.Helper()
	op := "-A"
	if !on {
		op = "-D"
	}
	for _, other := range []string{ips[0], ips[1], regionRelay} {
		netnsRun(t, "ip", "netns", "exec", "rln2", "iptables", op, "INPUT", "-s", other, "-j", "DROP")
		netnsRun(t, "ip", "netns", "exec", "rln2", "iptables", op, "OUTPUT", "-d", other, "-j", "DROP")
	}
}

// TestRegionNetnsDelayPartition: three regions 50 ms apart, skewed load
// with real clients (eu 16 connections, us and ap 4) on ten keys of
// RL.FIXED 300 per 10 s, 20 s connected, then ap cut off for 10 s, then
// 10 s healed. Every window's total, as the clients count it, stays within
// L + (R−1)·e = 300 + 2·10, and the connected windows use L within 5%.
func TestRegionNetnsDelayPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("40 s across three namespaces: not in -short")
	}
	ips, netem := setupRegionNet(t)
	relay := &net.TCPAddr{IP: net.ParseIP(regionRelay)}
	clients := make([]*redis.Client, 3)
	for i, ip := range ips {
		var peers []string
		for j, other := range regionNames {
			switch {
			case j == i:
			case netem:
				peers = append(peers, other+"="+ips[j]+":6379")
			default:
				peers = append(peers, other+"="+startDelayLink(t, regionRelay+":0", ips[j]+":6379", 50*time.Millisecond, relay).Addr())
			}
		}
		p := rlstoretest.Start(t, "ip", nil, "netns", "exec", fmt.Sprintf("rln%d", i), rlstoreBin, "--bind", ip, "--port", "6379",
			"--protected-mode", "no", "--region", regionNames[i], "--region-peers", strings.Join(peers, ","), "--cluster-secret", "rln-secret")
		p.Addr(t)
		clients[i] = redis.NewClient(&redis.Options{Addr: ip + ":6379", Protocol: 2, MaxRetries: -1, PoolSize: 16})
		t.Cleanup(func() { _ = clients[i].Close() })
	}
	for _, c := range clients {
		require.Eventually(t, func() bool {
			info, err := c.Info(context.Background(), "regions").Result()
			return err == nil && strings.Contains(info, "rl_region_recovered:1")
		}, 30*time.Second, 100*time.Millisecond, "every region hears from the others")
	}
	counts := &regionCounts{n: map[regionWindow][]int{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for region, conns := range []int{16, 4, 4} {
		for c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c; ctx.Err() == nil; i++ {
					key := "k" + strconv.Itoa(i%10)
					v, err := clients[region].Do(ctx, "RL.FIXED", key, 300, 10).Int64Slice()
					if err == nil && v[0] == 1 {
						counts.add(key, windowEnd(v[4], 10), region)
					}
				}
			}()
		}
	}
	window := func(d time.Duration) (from, to int64) {
		from = time.Now().Unix() + 11
		<-time.After(d)
		return from, time.Now().Unix() - 1
	}
	// 25 s: the windows wholly inside end in [start+11, start+24], which
	// holds a multiple of 10 whatever the start (20 s left one start in ten
	// with no connected window at all).
	connFrom, connTo := window(25 * time.Second)
	regionCut(t, ips, true)
	window(10 * time.Second)
	regionCut(t, ips, false)
	window(10 * time.Second)
	stop()
	wg.Wait()

	counts.mu.Lock()
	defer counts.mu.Unlock()
	worst, used, n := 0.0, 0.0, 0
	for w, by := range counts.n {
		total := by[0] + by[1] + by[2]
		worst = max(worst, float64(total)/300)
		assert.LessOrEqual(t, total, 320, "%s, window ending %d: %v", w.key, w.end, by)
		if w.end >= connFrom && w.end <= connTo {
			used += float64(total) / 300
			n++
		}
	}
	t.Logf("%d windows: worst total/L %.3f; connected windows (%d): mean total/L %.3f", len(counts.n), worst, n, used/max(1, float64(n)))
	require.Positive(t, n)
	assert.GreaterOrEqual(t, used/float64(n), 0.95, "connected, the budget is used")
	for i, c := range clients {
		info, err := c.Info(context.Background(), "regions").Result()
		require.NoError(t, err)
		t.Logf("%s's INFO regions:\n%s", regionNames[i], info)
	}
}
