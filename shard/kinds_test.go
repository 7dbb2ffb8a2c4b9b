package shard

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixedP(limit int64, win time.Duration) window.Params {
	return window.Params{Kind: window.KindFixed, Limit: limit, Period: win}
}

func logP(limit int64, win time.Duration) window.Params {
	return window.Params{Kind: window.KindLog, Limit: limit, Period: win}
}

func leakyP(capacity, rate int64, period time.Duration) window.Params {
	return window.Params{Kind: window.KindLeaky, Limit: capacity, Rate: rate, Period: period}
}

func TestDecideEveryKind(t *testing.T) {
	m := newMap(t, Config{})
	walk(t, m, "fixed", fixedP(2, time.Minute), []step{
		{0, 1, true, 1, 0},
		{time.Second, 1, true, 0, 0},
		{2 * time.Second, 1, false, 0, 58 * time.Second},
		{time.Minute, 2, true, 0, 0}, // a new window
	})
	walk(t, m, "log", logP(3, time.Second), []step{
		{0, 1, true, 2, 0},
		{time.Millisecond, 1, true, 1, 0},
		{2 * time.Millisecond, 1, true, 0, 0},
		{3 * time.Millisecond, 1, false, 0, 997 * time.Millisecond},
		{time.Second, 1, true, 0, 0},
	})
	walk(t, m, "leaky", leakyP(2, 1, time.Second), []step{
		{0, 1, true, 1, 0},
		{0, 1, true, 0, time.Second}, // admitted, but waits its turn
		{0, 1, false, 0, time.Second},
	})
	for _, k := range []string{"fixed", "log", "leaky"} {
		inf, ok := m.Get([]byte(k), t0)
		require.True(t, ok, k)
		assert.Equal(t, k, inf.Params.Kind.String())
		assert.Greater(t, inf.Expiry, t0, k)
	}
}

// TestLogGrowsIntoBlocks drives a Log key from inline entries into a block
// and back, and checks the Map's decisions against a bare window.Log.
func TestLogGrowsIntoBlocks(t *testing.T) {
	m := newMap(t, Config{})
	p := logP(window.MaxLogLimit, time.Second)
	ref := make([]uint64, 0, window.MaxLogLimit+1)
	for i := range int64(3 * window.MaxLogLimit) {
		now := t0 + i*int64(time.Millisecond)/2
		d, err := m.Decide([]byte("k"), p, now, 1, false)
		require.NoError(t, err)
		var want window.Decision
		want, ref = p.Log().Decide(ref, now, 1, false)
		require.Equal(t, want, d, "step %d", i)
	}
	inf, ok := m.Get([]byte("k"), t0+int64(3*window.MaxLogLimit)*int64(time.Millisecond)/2)
	require.True(t, ok)
	assert.Equal(t, p.Log().Count(ref, t0+int64(3*window.MaxLogLimit)*int64(time.Millisecond)/2), inf.Count)
	es := exportAll(m)
	require.Len(t, es, 1)
	m2 := newMap(t, Config{})
	require.NoError(t, m2.Import(es[0], t0))
	assert.Equal(t, es, exportAll(m2))
	assert.True(t, m.Delete([]byte("k")))
}

func TestWrongTypeEveryKind(t *testing.T) {
	m := newMap(t, Config{})
	ps := []window.Params{slideP(5, time.Minute), tokenP(5, 1, time.Second), fixedP(5, time.Minute),
		logP(5, time.Minute), leakyP(5, 1, time.Second)}
	for _, p := range ps {
		_, err := m.Decide([]byte(p.Kind.String()), p, t0, 1, false)
		require.NoError(t, err)
	}
	for _, have := range ps {
		for _, use := range ps {
			_, err := m.Decide([]byte(have.Kind.String()), use, t0, 1, true)
			if have.Kind == use.Kind {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrWrongType, "%v on a %v key", use.Kind, have.Kind)
			}
		}
		_, err := m.Throttle([]byte(have.Kind.String()), window.Throttle{MaxBurst: 1, Count: 1, Period: 1}, t0, 1)
		if have.Kind == window.KindToken {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, ErrWrongType, "throttle on a %v key", have.Kind)
		}
	}
}

func TestThrottle(t *testing.T) {
	m := newMap(t, Config{})
	p := window.Throttle{MaxBurst: 15, Count: 30, Period: 60}
	r, err := m.Throttle([]byte("u"), p, t0, 0)
	require.NoError(t, err)
	assert.Equal(t, window.ThrottleReply{Limit: 16, Remaining: 16, RetryAfter: -1}, r)
	assert.EqualValues(t, 0, m.Len(), "a peek creates no key")
	r, err = m.Throttle([]byte("u"), p, t0, -5)
	require.NoError(t, err)
	assert.False(t, r.Limited)
	assert.EqualValues(t, 0, m.Len(), "a refund on a missing key creates nothing")
	r, err = m.Throttle([]byte("u"), p, t0, 1)
	require.NoError(t, err)
	assert.Equal(t, window.ThrottleReply{Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2}, r)
	inf, ok := m.Get([]byte("u"), t0)
	require.True(t, ok)
	assert.Equal(t, window.KindToken, inf.Params.Kind)
	// RL.TOKEN with the same parameters shares the state.
	d, err := m.Decide([]byte("u"), window.Params{Kind: window.KindToken, Limit: 16, Rate: 30, Period: time.Minute}, t0, 1, false)
	require.NoError(t, err)
	assert.EqualValues(t, 14, d.Remaining)
	r, err = m.Throttle([]byte("u"), p, t0, -10)
	require.NoError(t, err)
	assert.Equal(t, int64(16), r.Remaining)
	assert.EqualValues(t, 0, m.Len(), "a refund to a full bucket drops the key")
	_, err = m.Throttle([]byte("u"), window.Throttle{MaxBurst: 1, Count: 0, Period: 1}, t0, 1)
	assert.ErrorIs(t, err, window.ErrRate)
}

// ruleKey names a rule's state key as a caller of DecideAll might: the store
// gives the name no meaning.
func ruleKey(policy string, rule int, key string) []byte {
	return fmt.Appendf(nil, "%s/%d/%s", policy, rule, key)
}

func policyKeys(policy string, n int, key string) [][]byte {
	var ks [][]byte
	for i := range n {
		ks = append(ks, ruleKey(policy, i, key))
	}
	return ks
}

const route = "user:1" // the DecideAll tests' route

func TestDecideAllAllOrNothing(t *testing.T) {
	m := newMap(t, Config{})
	q := &Multi{Keys: policyKeys("api", 2, "user:1"), Params: []window.Params{slideP(10, time.Minute), slideP(2, 3*time.Second)}}
	sec := int64(time.Second)
	for i, want := range []bool{true, true, false, false} {
		ds, left, err := m.DecideAll([]byte(route), q, t0+int64(i)*sec/4, 1, false, nil)
		require.NoError(t, err)
		assert.Zero(t, left)
		assert.Equal(t, want, ds[0].Allowed && ds[1].Allowed, "request %d", i)
	}
	// The denials charged neither rule: the minute rule still holds 2.
	ds, _, err := m.DecideAll([]byte(route), q, t0+3*sec, 1, true, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 7, ds[0].Remaining, "10 - 2 charged - this request")
	assert.True(t, ds[1].Allowed)
	assert.EqualValues(t, 2, m.Len())
	for _, k := range q.Keys { // all in the route's shard
		_, ok := m.Lookup(k, []byte(route))
		assert.True(t, ok, "%q", k)
	}
	// Independent of native state on the same key.
	_, err = m.Decide([]byte("user:1"), tokenP(1, 1, time.Hour), t0, 1, false)
	require.NoError(t, err)
	ds, _, err = m.DecideAll([]byte(route), q, t0+3*sec, 1, false, nil)
	require.NoError(t, err)
	assert.True(t, ds[0].Allowed && ds[1].Allowed)
}

func TestDecideAllPenaltyAndFreshKind(t *testing.T) {
	m := newMap(t, Config{})
	q := &Multi{Keys: policyKeys("p", 1, "k"), Params: []window.Params{fixedP(1, time.Minute)},
		Penalty: ruleKey("p", 255, "k"), For: 10 * time.Second}
	sec := int64(time.Second)
	ds, left, err := m.DecideAll([]byte(route), q, t0, 1, false, nil)
	require.NoError(t, err)
	require.True(t, ds[0].Allowed)
	require.Zero(t, left)
	ds, left, _ = m.DecideAll([]byte(route), q, t0+sec, 1, false, nil)
	assert.False(t, ds[0].Allowed)
	assert.Equal(t, 10*time.Second, left, "the denial that starts a penalty")
	_, left, _ = m.DecideAll([]byte(route), q, t0+4*sec, 1, false, nil)
	assert.Equal(t, 7*time.Second, left)
	_, left, _ = m.DecideAll([]byte(route), q, t0+4*sec, 1, true, nil)
	assert.Equal(t, 7*time.Second, left)
	// Changing the rule's algorithm starts it fresh.
	q.Params[0] = tokenP(1, 1, time.Hour)
	ds, left, _ = m.DecideAll([]byte(route), q, t0+11*sec, 1, false, nil)
	assert.Zero(t, left)
	assert.True(t, ds[0].Allowed)
	e, ok := m.Lookup(q.Keys[0], []byte(route))
	require.True(t, ok)
	assert.Equal(t, window.KindToken, e.Params.Kind)
}

func TestDecideAllFullChargesNone(t *testing.T) {
	m := newMap(t, Config{MaxKeys: 1})
	q := &Multi{Keys: policyKeys("p", 2, "k"), Params: []window.Params{fixedP(1, time.Minute), fixedP(1, time.Minute)}}
	_, _, err := m.DecideAll([]byte(route), q, t0, 1, true, nil)
	assert.ErrorIs(t, err, ErrFull, "a peek replies as the same call would")
	_, _, err = m.DecideAll([]byte(route), q, t0, 1, false, nil)
	assert.ErrorIs(t, err, ErrFull)
	assert.EqualValues(t, 0, m.Len())
	ds, _, err := m.DecideAll([]byte(route), q, t0, 2, true, nil)
	require.NoError(t, err, "a peek the rules deny needs no room")
	assert.False(t, ds[0].Allowed)
}

func TestDecideAllPeekNeedsRoomOnlyForMissingKeys(t *testing.T) {
	m := newMap(t, Config{MaxKeys: 2})
	q := &Multi{Keys: policyKeys("p", 2, "k"), Params: []window.Params{fixedP(2, time.Minute), fixedP(2, time.Minute)}}
	_, _, err := m.DecideAll([]byte(route), q, t0, 1, false, nil)
	require.NoError(t, err)
	ds, _, err := m.DecideAll([]byte(route), q, t0, 1, true, nil)
	require.NoError(t, err, "both keys exist, so the store being full does not matter")
	assert.True(t, ds[0].Allowed && ds[1].Allowed)
}

// TestDecideAllRoute checks that the route, not the keys, picks the shard:
// keys whose own hashes pick other shards are kept in the route's, found
// there by Lookup and Revert with that route, and put back there by Import.
func TestDecideAllRoute(t *testing.T) {
	m := newMap(t, Config{})
	q := &Multi{Keys: [][]byte{ruleKey("p", 0, "a"), nil}, Params: []window.Params{fixedP(1, time.Minute), fixedP(1, time.Minute)}}
	for i := 0; ; i++ { // find two keys whose own hashes pick different shards
		require.Less(t, i, 64)
		q.Keys[1] = ruleKey("p", 1, fmt.Sprint("b", i))
		if m.hash(q.Keys[0])&m.mask != m.hash(q.Keys[1])&m.mask {
			break
		}
	}
	ds, _, err := m.DecideAll([]byte("r"), q, t0, 1, false, nil)
	require.NoError(t, err)
	require.True(t, ds[0].Allowed && ds[1].Allowed)
	for _, k := range q.Keys {
		_, ok := m.Lookup(k, nil)
		assert.False(t, ok, "%q is not in its own shard", k)
	}
	e, ok := m.Lookup(q.Keys[1], []byte("r"))
	require.True(t, ok)
	e.Route = []byte("r")
	m.Flush()
	require.NoError(t, m.Import(e, t0))
	ds, _, err = m.DecideAll([]byte("r"), q, t0, 1, true, nil)
	require.NoError(t, err)
	assert.False(t, ds[1].Allowed, "Import put the state back where DecideAll finds it")
	assert.True(t, ds[0].Allowed)
	checkInvariants(t, m)
}

// TestThrottleAppliesParamsOnEveryCall checks that CL.THROTTLE, like the RL
// commands, applies its parameters to the key on every call that is not a
// peek, denied or refunding, and leaves them alone on a peek.
func TestThrottleAppliesParamsOnEveryCall(t *testing.T) {
	m := newMap(t, Config{})
	minute := window.Throttle{MaxBurst: 0, Count: 1, Period: 60}
	twoMinutes := window.Throttle{MaxBurst: 0, Count: 1, Period: 120}
	r, err := m.Throttle([]byte("u"), minute, t0, 1)
	require.NoError(t, err)
	require.False(t, r.Limited)
	params := func() window.Params {
		inf, ok := m.Get([]byte("u"), t0)
		require.True(t, ok)
		return inf.Params
	}
	r, err = m.Throttle([]byte("u"), twoMinutes, t0, 0)
	require.NoError(t, err)
	assert.Equal(t, time.Minute, params().Period, "a peek leaves the parameters alone")
	r, err = m.Throttle([]byte("u"), twoMinutes, t0, 1)
	require.NoError(t, err)
	require.True(t, r.Limited)
	assert.Equal(t, 2*time.Minute, params().Period, "a denied call applies its parameters, as RL.TOKEN does")
	_, err = m.Throttle([]byte("u"), minute, t0, -1)
	require.NoError(t, err)
	assert.EqualValues(t, 0, m.Len(), "the refund emptied the bucket")
}
