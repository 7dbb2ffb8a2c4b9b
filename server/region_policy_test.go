package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// TestRegionsShareOnePolicy: RL.CHECK of a policy whose rules are all
// SLIDE or FIXED shares each rule across regions as a
// global key does: the hot region takes L less the others' reserves, the
// others their reserves, and no more. A policy with a TOKEN rule stays per
// region: each region admits its whole limit.
func TestRegionsShareOnePolicy(t *testing.T) {
	rs := startRegions(t, []string{"ap", "eu", "us"}, nil)
	waitRecovered(t, rs)
	ctx := context.Background()
	for _, r := range rs {
		require.NoError(t, r.rdb.Do(ctx, "RL.POLICY", "SET", "api", "SLIDE", 100, 60, "FIXED", 1000, 3600).Err())
		require.NoError(t, r.rdb.Do(ctx, "RL.POLICY", "SET", "tok", "SLIDE", 100, 60, "TOKEN", 1000, 1000, 3600).Err())
	}
	check := func(r *testRegion, name string, n int) int {
		got := 0
		for range n {
			v, err := r.rdb.Do(ctx, "RL.CHECK", name, "user:1").Slice()
			require.NoError(t, err)
			got += int(v[0].(int64))
		}
		return got
	}
	total := 0
	eventually(t, "eu to take its part", func() bool {
		total += check(rs[1], "api", 10)
		return total >= 68
	})
	assert.Equal(t, 68, total)
	assert.Zero(t, check(rs[1], "api", 10), "eu is at L − the others' reserves")
	eventually(t, "the others to take their reserves", func() bool {
		total += check(rs[0], "api", 5) + check(rs[2], "api", 5)
		return total >= 100
	})
	assert.Equal(t, 100, total, "one limit across the regions")
	v, err := rs[0].rdb.Do(ctx, "RL.CHECK", "api", "user:1", "PEEK").Slice()
	require.NoError(t, err)
	assert.Equal(t, int64(0), v[0])

	assert.Equal(t, 100, check(rs[1], "tok", 120), "a policy with a TOKEN rule is per region")
	assert.Equal(t, 100, check(rs[0], "tok", 120))

	rk := (&policy.Policy{Name: "api"}).AppendRuleKey(nil, 0, []byte("user:1"))
	assert.True(t, rs[1].s.reg.RuleGlobal(rk))
	assert.False(t, rs[1].s.reg.RuleGlobal((&policy.Policy{Name: "tok"}).AppendRuleKey(nil, 0, []byte("user:1"))))
	eventually(t, "eu's rule key in its key store, where the policy keeps it, with its 68", func() bool {
		e, ok := rs[1].s.cfg.Store.Lookup(rk, policy.Route(rk))
		return ok && e.Params.Count(e.State, e.Counters, rs[1].s.unixNano()) == 68
	})
}

// TestRegionPolicyRestored: a global policy's rule keys are taken back
// from the key store at start, as a global key's are: eu starts with its
// 68 of the policy's first rule in its store (and the policy in its data
// directory), all regions new; it admits nothing more, us and ap their
// reserves.
func TestRegionPolicyRestored(t *testing.T) {
	real0 := time.Now()
	now := real0.Truncate(time.Minute).Add(-50 * time.Second)
	clock := func() time.Time { return now.Add(time.Since(real0)) }
	api := &policy.Policy{Name: "api"}
	rk := api.AppendRuleKey(nil, 0, []byte("user:1"))
	rs := startRegionsWith(t, []string{"ap", "eu", "us"}, nil, func(name string) Config {
		pols, _, err := persistence.OpenPolicies(t.TempDir())
		require.NoError(t, err)
		t.Cleanup(func() { _ = pols.Close() })
		require.NoError(t, pols.Put("api", []byte("FIXED 100 60")))
		m, err := shard.New(shard.Config{})
		require.NoError(t, err)
		if name == "eu" {
			p := window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Minute}
			e := shard.Entry{Key: rk, Route: policy.Route(rk), Params: p, State: window.State{uint64(now.UnixNano()), 68}}
			require.NoError(t, m.Import(e, now.UnixNano()))
		}
		return Config{Store: m, Clock: clock, Policies: pols}
	})
	waitRecovered(t, rs)
	ctx := context.Background()
	check := func(r *testRegion) int {
		v, err := r.rdb.Do(ctx, "RL.CHECK", "api", "user:1").Slice()
		require.NoError(t, err)
		return int(v[0].(int64))
	}
	assert.Zero(t, check(rs[1]), "eu took back its 68")
	total := 0
	eventually(t, "us and ap to take their reserves", func() bool {
		total += check(rs[0]) + check(rs[2])
		return total >= 32
	})
	assert.Equal(t, 32, total)
}
