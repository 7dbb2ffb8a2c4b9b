package server

import (
	"context"
	"errors"
	"testing"

	"github.com/rlstore/rlstore/server/internal/decide"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
)

// TestRegionsGlobalPolicyPenalty: a policy with a PENALTY is global too:
// its rule is one limit across the regions (eu takes L less us's reserve,
// us its reserve, 10 in all), and its penalty is per region: eu's denial
// by the rule's limit blocks the key in eu, for the penalty, and not in us.
func TestRegionsGlobalPolicyPenalty(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, nil)
	waitRecovered(t, rs)
	ctx := context.Background()
	for _, r := range rs {
		require.NoError(t, r.rdb.Do(ctx, "RL.POLICY", "SET", "pen", "FIXED", 10, 3600, "PENALTY", "10m").Err())
	}
	check := func(r *testRegion) []any {
		v, err := r.rdb.Do(ctx, "RL.CHECK", "pen", "user:1").Slice()
		require.NoError(t, err)
		return v
	}
	eu, us := rs[0], rs[1]
	total := 0
	eventually(t, "eu to take L less us's reserve", func() bool {
		total += int(check(eu)[0].(int64))
		return total >= 8
	})
	require.Equal(t, 8, total)
	pk := (&policy.Policy{Name: "pen"}).AppendPenaltyKey(nil, []byte("user:1"))
	assert.Zero(t, eu.s.cfg.Store.PenaltyLeft([]byte("user:1"), pk, eu.s.unixNano()), "no denial yet")
	v := check(eu)
	assert.Equal(t, int64(0), v[0], "eu is at its part of the one limit")
	left := eu.s.cfg.Store.PenaltyLeft([]byte("user:1"), pk, eu.s.unixNano())
	assert.Greater(t, left.Minutes(), 9.0, "the denial started eu's penalty")
	assert.GreaterOrEqual(t, v[3].(int64), left.Milliseconds()-1000, "the reply waits for the penalty")
	assert.Zero(t, us.s.cfg.Store.PenaltyLeft([]byte("user:1"), pk, us.s.unixNano()), "eu's penalty is eu's")
	eventually(t, "us to count eu's 8", func() bool {
		v, err := us.rdb.Do(ctx, "RL.CHECK", "pen", "user:1", "PEEK").Slice()
		require.NoError(t, err)
		return v[2].(int64) == 1 // remaining: 10 less eu's 8 less the request's 1
	})
	us1, us2 := check(us), check(us)
	assert.Equal(t, []int64{1, 1}, []int64{us1[0].(int64), us2[0].(int64)}, "us: the rest of the one limit")
	assert.Equal(t, int64(0), check(us)[0], "one limit: 10 in all")
	assert.Greater(t, us.s.cfg.Store.PenaltyLeft([]byte("user:1"), pk, us.s.unixNano()).Minutes(), 9.0, "us's own denial by the limit starts its own penalty")
	assert.Equal(t, int64(0), check(eu)[0], "eu stays blocked")
}

// silentPeer stands in for a region that never answers.
type silentPeer struct{}

func (silentPeer) Forward(context.Context, string, [][][]byte) ([][]byte, error) {
	return nil, errors.New("no answer")
}

func (silentPeer) Send(string, uint64, []byte, int, cluster.Replier) {}

// TestRegionPenaltyNotOnEscrow: a denial by the escrow alone (the limit
// fits; nothing was acknowledged) starts no penalty; a denial by the limit
// does.
func TestRegionPenaltyNotOnEscrow(t *testing.T) {
	rc := &RegionConfig{Name: "eu", Peers: []RegionPeer{{Name: "us", Addr: "127.0.0.1:1"}}, Secret: []byte("s"),
		Forwarder: silentPeer{}, Deny: true}
	s := newTestServer(t, Config{Region: rc})
	t.Cleanup(func() { _ = s.Close() })
	echoedBy(s.reg, "us")
	p, err := policy.Parse("pen", []string{"FIXED", "100", "3600", "PENALTY", "10m"})
	require.NoError(t, err)
	pk := p.AppendPenaltyKey(nil, []byte("user:1"))
	decideCost := func(cost int64) bool {
		r := decide.Request{Op: decide.OpCheck, Policy: p, Cost: cost, Now: s.unixNano()}
		o, err := s.dec.Decide([]byte("user:1"), &r)
		require.NoError(t, err)
		return o.D.Allowed
	}
	for i := range 5 { // e = max(1, ⌊0.1·100/2⌋) = 5, no reserve
		require.True(t, decideCost(1), "request %d: within the escrow", i)
	}
	assert.False(t, decideCost(1), "the escrow is spent: nothing was acknowledged")
	assert.Zero(t, s.cfg.Store.PenaltyLeft([]byte("user:1"), pk, s.unixNano()), "an escrow denial starts no penalty")
	assert.False(t, decideCost(200), "more than the limit")
	assert.Positive(t, s.cfg.Store.PenaltyLeft([]byte("user:1"), pk, s.unixNano()), "a denial by the limit does")
}
