package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// TestRegionKeysInKeyspace: a global key is a key of the region that
// decided it: EXISTS, TYPE, PTTL, SCAN, KEYS and DBSIZE see it, DEL
// deletes it (and forgets this region's units), FLUSHALL too.
func TestRegionKeysInKeyspace(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, nil)
	waitRecovered(t, rs)
	ctx, eu := context.Background(), rs[0].rdb
	require.Equal(t, 3, regionAdmits(t, rs[0], "api:1", 3))
	require.NoError(t, eu.Do(ctx, "RL.SLIDE", "api:2", 100, 60).Err())

	assert.Equal(t, int64(2), eu.Exists(ctx, "api:1", "api:2").Val())
	assert.Equal(t, "fixed", eu.Type(ctx, "api:1").Val())
	assert.Equal(t, "slide", eu.Type(ctx, "api:2").Val())
	assert.Greater(t, eu.PTTL(ctx, "api:1").Val(), time.Duration(0))
	assert.Equal(t, int64(2), eu.DBSize(ctx).Val())
	var keys []string
	for it := eu.Scan(ctx, 0, "api:*", 100).Iterator(); it.Next(ctx); {
		keys = append(keys, it.Val())
	}
	assert.ElementsMatch(t, []string{"api:1", "api:2"}, keys)
	assert.ElementsMatch(t, []string{"api:1", "api:2"}, eu.Keys(ctx, "*").Val())

	assert.Equal(t, int64(1), eu.Del(ctx, "api:1").Val())
	assert.Equal(t, int64(0), eu.Exists(ctx, "api:1").Val())
	assert.Equal(t, "none", eu.Type(ctx, "api:1").Val())
	eventually(t, "the sync after DEL", func() bool { return rs[0].s.reg.Syncs() >= 2 })
	assert.Equal(t, int64(0), eu.Exists(ctx, "api:1").Val(), "a sync does not bring a deleted key back")

	require.NoError(t, eu.FlushAll(ctx).Err())
	assert.Equal(t, int64(0), eu.DBSize(ctx).Val())
	assert.Equal(t, 1, regionAdmits(t, rs[0], "api:1", 1))
	assert.Equal(t, int64(1), eu.DBSize(ctx).Val())
}

// TestRegionKeysMaxKeys: a new global key needs room in the key store, as
// a local key does, and is refused with Redis's -OOM when there is none.
func TestRegionKeysMaxKeys(t *testing.T) {
	rs := startRegionsWith(t, []string{"eu", "us"}, nil, func(string) Config {
		m, err := shard.New(shard.Config{MaxKeys: 2})
		require.NoError(t, err)
		return Config{Store: m}
	})
	waitRecovered(t, rs)
	ctx, eu := context.Background(), rs[0].rdb
	require.NoError(t, eu.Do(ctx, "RL.FIXED", "local", 10, 60).Err())
	require.NoError(t, eu.Do(ctx, "RL.FIXED", "api:1", 10, 60).Err())
	err := eu.Do(ctx, "RL.SLIDE", "api:2", 10, 60).Err()
	require.Error(t, err)
	assert.Equal(t, "OOM command not allowed when used memory > 'maxmemory'.", err.Error())
	assert.Contains(t, regionInfo(t, rs[0]), "rl_region_keys:2") // local and api:1: every key is global here
	require.NoError(t, eu.Do(ctx, "RL.FIXED", "api:1", 10, 60).Err(), "a key held is decided")
	require.NoError(t, eu.Do(ctx, "RL.SLIDE", "api:2", 10, 60, "PEEK").Err(), "a peek adds nothing")
	assert.Equal(t, int64(2), eu.DBSize(ctx).Val())
}

// TestRegionKeysRestored: when every region restarts at once, no other
// region can echo a region's units back; the key store, loaded from the
// data directory, has them. eu holds 68 of api:1's 100 in its store.
func TestRegionKeysRestored(t *testing.T) {
	for _, saved := range []bool{true, false} {
		// The clock starts 10 s into a minute, so that api:1's window does not turn during the test.
		real0 := time.Now()
		now := real0.Truncate(time.Minute).Add(-50 * time.Second)
		clock := func() time.Time { return now.Add(time.Since(real0)) }
		rs := startRegionsWith(t, []string{"ap", "eu", "us"}, nil, func(name string) Config {
			m, err := shard.New(shard.Config{})
			require.NoError(t, err)
			if saved && name == "eu" {
				p := window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Minute}
				st := window.State{uint64(now.UnixNano()), 68}
				require.NoError(t, m.Import(shard.Entry{Key: []byte("api:1"), Params: p, State: st}, now.UnixNano()))
			}
			return Config{Store: m, Clock: clock}
		})
		waitRecovered(t, rs)
		if !saved {
			euGot := 0
			eventually(t, "eu to take its part again", func() bool {
				euGot += regionAdmitsIn(t, rs[1], "api:1", 60, 10)
				return euGot >= 68
			})
			assert.Equal(t, 68, euGot, "without its saved units eu starts the window over")
			continue
		}
		assert.Equal(t, 0, regionAdmitsIn(t, rs[1], "api:1", 60, 20), "eu took back its 68")
		total := 0
		eventually(t, "us and ap to take their reserves", func() bool {
			total += regionAdmitsIn(t, rs[0], "api:1", 60, 5) + regionAdmitsIn(t, rs[2], "api:1", 60, 5)
			return total >= 32
		})
		assert.Equal(t, 32, total)
		assert.Equal(t, int64(1), rs[1].rdb.Exists(context.Background(), "api:1").Val())
	}
}

// waitRecovered waits until every region knows what it admitted before it
// started: a region denies global keys until then.
func waitRecovered(t *testing.T, rs []*testRegion) {
	t.Helper()
	for _, r := range rs {
		eventually(t, r.name+" to recover", func() bool { return strings.Contains(regionInfo(t, r), "rl_region_recovered:1") })
	}
}

// TestRegionsRefusePlainPeer: a region whose links are TLS (--tls-cluster
// yes) refuses batches that come over a plain connection, even from a
// region that proves the secret.
func TestRegionsRefusePlainPeer(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(name string, rc *RegionConfig) { rc.TLS = name == "eu" })
	eventually(t, "eu to refuse us's batches", func() bool { return !strings.Contains(regionInfo(t, rs[0]), "rl_region_refused:0") })
	assert.Contains(t, regionInfo(t, rs[1]), "rl_region_refused:0", "us takes eu's (plain: us does not ask for TLS)")
	assert.Contains(t, regionInfo(t, rs[0]), "rl_region_recovered:0", "eu never hears from us")
	assert.Contains(t, regionInfo(t, rs[1]), "name=eu,addr="+rs[0].addr+",state=down")
}

// TestRegionsRefuseReserveUnlessLocal: RL.RESERVE, RL.REFUND and
// RL.ACQUIRE would change a global key's units behind the other regions'
// backs; they are refused unless the key is --region-local. A reservation
// against a policy is refused when the policy is global.
func TestRegionsRefuseReserveUnlessLocal(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(_ string, rc *RegionConfig) { rc.Local = []string{"local:*"} })
	waitRecovered(t, rs)
	ctx, eu := context.Background(), rs[0].rdb
	for _, cmd := range [][]any{
		{"RL.RESERVE", "api:1", "SLIDE", 10, 60, "TTL", 10},
		{"RL.REFUND", "api:1", "COST", 1},
		{"RL.REFUND", "api:1", "FIXED", 10, 60, "COST", 1},
		{"RL.ACQUIRE", "api:1", 10, 10},
	} {
		err := eu.Do(ctx, cmd...).Err()
		require.Error(t, err, "%v", cmd)
		assert.Equal(t, "ERR "+cmd[0].(string)+" cannot be global; use RL.SLIDE or RL.FIXED, or mark the key LOCAL", err.Error())
		cmd[1] = "local:1"
		assert.NoError(t, eu.Do(ctx, cmd...).Err(), "%v", cmd)
	}
	require.NoError(t, eu.Do(ctx, "RL.POLICY", "SET", "p", "SLIDE", 10, 60, "TOKEN", 10, 1, 1).Err())
	assert.NoError(t, eu.Do(ctx, "RL.RESERVE", "api:1", "POLICY", "p", "TTL", 10).Err(), "a policy per region")
	require.NoError(t, eu.Do(ctx, "RL.POLICY", "SET", "g", "SLIDE", 10, 60).Err())
	err := eu.Do(ctx, "RL.RESERVE", "api:1", "POLICY", "g", "TTL", 10).Err()
	require.Error(t, err, "a global policy's rules are global keys")
	assert.Equal(t, "ERR RL.RESERVE cannot be global; use RL.CHECK, or a policy with a rule that is not SLIDE or FIXED, or mark the key LOCAL", err.Error())
}
