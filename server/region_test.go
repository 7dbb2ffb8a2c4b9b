package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

type testRegion struct {
	name string
	s    *Server
	addr string
	rdb  *redis.Client
}

// startRegions runs one single-node region per name on loopback, each
// knowing all the others. tweak may change each one's RegionConfig.
func startRegions(t *testing.T, names []string, tweak func(name string, rc *RegionConfig)) []*testRegion {
	t.Helper()
	return startRegionsWith(t, names, tweak, nil)
}

// startRegionsWith is startRegions with each server's Config made by cfg.
func startRegionsWith(t *testing.T, names []string, tweak func(name string, rc *RegionConfig), cfg func(name string) Config) []*testRegion {
	t.Helper()
	lns := make([]net.Listener, len(names))
	for i := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[i] = ln
	}
	out := make([]*testRegion, len(names))
	for i, name := range names {
		rc := &RegionConfig{Name: name, Secret: []byte("region test secret"), Sync: 20 * time.Millisecond, Timeout: 300 * time.Millisecond}
		for j, other := range names {
			if j != i {
				rc.Peers = append(rc.Peers, RegionPeer{Name: other, Addr: lns[j].Addr().String()})
			}
		}
		if tweak != nil {
			tweak(name, rc)
		}
		fw := cluster.NewPeers(cluster.PeersConfig{Name: name, Secret: rc.Secret, Conns: 1, Timeout: rc.Timeout})
		t.Cleanup(fw.Close)
		rc.Forwarder = fw
		var c Config
		if cfg != nil {
			c = cfg(name)
		}
		c.Listener, c.Region = lns[i], rc
		s := newTestServer(t, c)
		addr := serveTest(t, s)
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		t.Cleanup(func() { _ = rdb.Close() })
		out[i] = &testRegion{name: name, s: s, addr: addr, rdb: rdb}
	}
	return out
}

// regionWindow is the fixed window, in seconds, regionAdmits asks for: an
// hour or more, chosen when the package's tests start so that its current
// window has half an hour left (go test's -timeout is 30m): fixed windows
// are aligned to the Unix epoch, and a minute's window turned during a
// test would start the limit over.
var regionWindow = func() int64 {
	now, w := time.Now().Unix(), int64(3600)
	for w-now%w < 1800 {
		w++
	}
	return w
}()

// regionAdmits sends n requests of RL.FIXED key 100 regionWindow to r and
// counts the admitted.
func regionAdmits(t *testing.T, r *testRegion, key string, n int) int {
	t.Helper()
	return regionAdmitsIn(t, r, key, regionWindow, n)
}

// regionAdmitsIn is regionAdmits with a window of sec seconds.
func regionAdmitsIn(t *testing.T, r *testRegion, key string, sec int64, n int) int {
	t.Helper()
	got := 0
	for range n {
		v, err := r.rdb.Do(context.Background(), "RL.FIXED", key, 100, sec).Slice()
		require.NoError(t, err)
		if v[0].(int64) == 1 {
			got++
		}
	}
	return got
}

func regionInfo(t *testing.T, r *testRegion) string {
	t.Helper()
	s, err := r.rdb.Info(context.Background(), "regions").Result()
	require.NoError(t, err)
	return s
}

// TestRegionsShareOneLimit: a hot region takes what the others' reserves
// leave (L − 2·φ = 68 of 100 with three regions and β = 0.5), the others
// then their reserves, and no more: the total is the limit.
func TestRegionsShareOneLimit(t *testing.T) {
	rs := startRegions(t, []string{"ap", "eu", "us"}, nil)
	total := 0
	eventually(t, "the hot region to take its part", func() bool {
		total += regionAdmits(t, rs[1], "api:1", 10)
		return total >= 68
	})
	assert.Equal(t, 68, total)
	assert.Equal(t, 0, regionAdmits(t, rs[1], "api:1", 20), "eu is at L − the others' reserves")
	eventually(t, "the others to take their reserves", func() bool {
		total += regionAdmits(t, rs[0], "api:1", 5) + regionAdmits(t, rs[2], "api:1", 5)
		return total >= 100
	})
	assert.Equal(t, 100, total, "connected regions admit the limit, not beyond")
	eventually(t, "ap's RL.INFO to show every region's part", func() bool {
		inf, err := rs[0].rdb.Do(context.Background(), "RL.INFO", "api:1").Result()
		require.NoError(t, err)
		return strings.Contains(fmt.Sprint(inf), "regions ap=16,eu=68,us=16")
	})
	assert.Contains(t, regionInfo(t, rs[0]), "rl_regions:3")
	assert.Contains(t, regionInfo(t, rs[0]), "name=eu,addr=")
}

// TestRegionsRefuseTokenUnlessLocal: TOKEN, LEAKY, LOG and CL.THROTTLE
// cannot be global; a key matching --region-local is decided here alone.
func TestRegionsRefuseTokenUnlessLocal(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(_ string, rc *RegionConfig) { rc.Local = []string{"local:*"} })
	ctx := context.Background()
	for _, cmd := range [][]any{{"RL.TOKEN", "k", 10, 1, 1}, {"RL.LEAKY", "k", 10, 1, 1}, {"RL.LOG", "k", 10, 1}, {"CL.THROTTLE", "k", 10, 1, 1}} {
		err := rs[0].rdb.Do(ctx, cmd...).Err()
		require.Error(t, err, "%v", cmd)
		kind := strings.TrimPrefix(cmd[0].(string), "RL.")
		if kind == "CL.THROTTLE" {
			kind = "TOKEN"
		}
		assert.Equal(t, "ERR algorithm "+kind+" cannot be global; use SLIDE or FIXED, or mark the key LOCAL", err.Error())
	}
	v, err := rs[0].rdb.Do(ctx, "RL.TOKEN", "local:k", 10, 1, 1).Slice()
	require.NoError(t, err)
	assert.Equal(t, int64(1), v[0])
	eventually(t, "a global SLIDE key, once us has sent back eu's units", func() bool {
		v, err := rs[0].rdb.Do(ctx, "RL.SLIDE", "g", 5, 10).Slice()
		require.NoError(t, err)
		return v[0] == int64(1)
	})
}

// TestRegionsPartitionDeny: with --region-partition deny, once a region is
// gone the others admit only their escrow each (e = 3 of 100 with three
// regions): nothing they admit can be unknown to it beyond that.
func TestRegionsPartitionDeny(t *testing.T) {
	rs := startRegions(t, []string{"ap", "eu", "us"}, func(_ string, rc *RegionConfig) { rc.Deny = true })
	total := 0
	eventually(t, "some admissions acknowledged everywhere", func() bool {
		total += regionAdmits(t, rs[1], "api:1", 10)
		return total >= 40
	})
	eventually(t, "eu's admissions acknowledged", func() bool { return strings.Contains(regionInfo(t, rs[1]), "rl_region_unacked_units:0\r\n") })
	require.NoError(t, rs[0].s.Close()) // ap is cut off
	eventually(t, "eu to see ap down", func() bool { return strings.Contains(regionInfo(t, rs[1]), "name=ap,addr="+rs[0].addr+",state=down") })
	after := regionAdmits(t, rs[1], "api:2", 50) + regionAdmits(t, rs[2], "api:2", 50)
	assert.Equal(t, 6, after, "eu and us: their escrows (3 each) on a fresh key, then denied")
	assert.Equal(t, 6, regionAdmits(t, rs[1], "api:1", 10)+regionAdmits(t, rs[2], "api:1", 10), "api:1 too: the escrows only")
}

// TestRegionsRefuseAnotherBound: a region whose escrow differs is refused,
// with the reason in its log and the receiver's count.
func TestRegionsRefuseAnotherBound(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(name string, rc *RegionConfig) {
		if name == "us" {
			rc.Escrow = 0.3
		}
	})
	eventually(t, "eu to refuse us", func() bool {
		return strings.Contains(regionInfo(t, rs[0]), "rl_region_refused:") && !strings.Contains(regionInfo(t, rs[0]), "rl_region_refused:0")
	})
	assert.Contains(t, regionInfo(t, rs[1]), "name=eu,addr="+rs[0].addr+",state=down")
}

// TestRegionsRefuseAnotherSecret: a region proving another secret fails the handshake.
func TestRegionsRefuseAnotherSecret(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(name string, rc *RegionConfig) {
		if name == "us" {
			rc.Secret = []byte("another secret")
		}
	})
	eventually(t, "us to fail", func() bool {
		return strings.Contains(regionInfo(t, rs[1]), "state=down") && !strings.Contains(regionInfo(t, rs[1]), "failures=0")
	})
	assert.Equal(t, 0, regionAdmits(t, rs[0], "k", 50), "eu has not heard from us, which may hold its units of this window from before a restart")
	assert.Contains(t, regionInfo(t, rs[0]), "rl_region_recovered:0")
}

// TestRegionsShareOneSlideLimit: the same through RL.SLIDE, a sliding
// window over per-second buckets.
func TestRegionsShareOneSlideLimit(t *testing.T) {
	rs := startRegions(t, []string{"ap", "eu", "us"}, nil)
	ctx := context.Background()
	slide := func(r *testRegion, n int) int {
		got := 0
		for range n {
			v, err := r.rdb.Do(ctx, "RL.SLIDE", "api:s", 100, 60).Slice()
			require.NoError(t, err)
			if v[0].(int64) == 1 {
				got++
			}
		}
		return got
	}
	total := 0
	eventually(t, "the three regions to share the limit", func() bool {
		total += slide(rs[1], 10) + slide(rs[0], 2) + slide(rs[2], 2)
		return total >= 100
	})
	total += slide(rs[0], 5) + slide(rs[1], 5) + slide(rs[2], 5)
	assert.LessOrEqual(t, total, 106, "L + (R−1)·e: units in flight between regions may pass L by the escrows")
}
