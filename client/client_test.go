package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newClient(t testing.TB) *client.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: startRlstore(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	return client.New(rdb)
}

// TestSlideThreePerTen is the libraries' own vector: 3 per 10 s admits 3, then
// denies with a wait no longer than the window, and a denial consumes nothing.
func TestSlideThreePerTen(t *testing.T) {
	c, ctx := newClient(t), context.Background()
	for i := range 3 {
		d, err := c.Slide(ctx, "k", 3, 10*time.Second)
		require.NoError(t, err)
		assert.True(t, d.Allowed, "request %d", i+1)
		assert.Equal(t, int64(2-i), d.Remaining)
		assert.Equal(t, -1, d.Rule)
		assert.Equal(t, 10*time.Second, d.Window)
	}
	for range 3 {
		d, err := c.Slide(ctx, "k", 3, 10*time.Second)
		require.NoError(t, err)
		assert.False(t, d.Allowed)
		assert.Equal(t, int64(0), d.Remaining)
		assert.Greater(t, d.Wait, 8*time.Second)
		assert.LessOrEqual(t, d.Wait, 10*time.Second)
		h := d.Headers(client.HeaderOptions{Name: "api"})
		assert.Equal(t, `"api";q=3;w=10`, h.Get("RateLimit-Policy"))
		assert.Contains(t, []string{"9", "10"}, h.Get("Retry-After"))
	}
	// the denials charged nothing: a larger limit frees exactly the difference
	d, err := c.Slide(ctx, "k", 5, 10*time.Second, client.Cost(2))
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(0), d.Remaining)
}

func TestOptionsAndAlgorithms(t *testing.T) {
	c, ctx := newClient(t), context.Background()
	d, err := c.Fixed(ctx, "f", 5, time.Minute, client.Cost(5), client.Peek())
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(0), d.Remaining)
	d, err = c.Fixed(ctx, "f", 5, time.Minute) // the peek charged nothing
	require.NoError(t, err)
	assert.Equal(t, int64(4), d.Remaining)

	d, err = c.Log(ctx, "l", 2, 1500*time.Millisecond, client.Cost(3))
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, client.Never, d.Wait, "cost > limit can never be admitted")
	assert.Empty(t, d.Headers(client.HeaderOptions{}).Get("Retry-After"))

	d, err = c.Token(ctx, "t", 2, 1, time.Second, client.Cost(2))
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	d, err = c.Token(ctx, "t", 2, 1, time.Second)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Greater(t, d.Wait, time.Duration(0))
	assert.LessOrEqual(t, d.Wait, time.Second)

	d, err = c.Leaky(ctx, "q", 3, 1, time.Second)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	d, err = c.Leaky(ctx, "q", 3, 1, time.Second)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Greater(t, d.Wait, 900*time.Millisecond, "the second queued request waits its turn")

	d, err = c.Throttle(ctx, "th", 1, 1, time.Minute)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(2), d.Limit)
	_, err = c.Slide(ctx, "th", 3, time.Second)
	require.ErrorContains(t, err, "WRONGTYPE")
}

func TestPolicyCheck(t *testing.T) {
	c, ctx := newClient(t), context.Background()
	p := client.Policy{Rules: []client.Rule{
		{Algorithm: "SLIDE", Limit: 10, Window: time.Minute},
		{Algorithm: "token", Limit: 2, Rate: 1, Window: 3 * time.Second},
	}, Penalty: 30 * time.Second}
	require.NoError(t, c.PolicySet(ctx, "api", p))
	def, err := c.PolicyGet(ctx, "api")
	require.NoError(t, err)
	assert.Equal(t, "SLIDE 10 60 TOKEN 2 1 3 PENALTY 30", def)
	names, err := c.PolicyList(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"api"}, names)

	for range 2 {
		d, err := c.Check(ctx, "api", "carol")
		require.NoError(t, err)
		assert.True(t, d.Allowed)
		assert.Equal(t, 1, d.Rule)
	}
	d, err := c.Check(ctx, "api", "carol")
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.GreaterOrEqual(t, d.Wait, 29*time.Second, "the penalty")
	assert.Equal(t, time.Duration(0), d.Window)
	assert.Equal(t, `"api";q=2`, d.Headers(client.HeaderOptions{Name: "api"}).Get("RateLimit-Policy"))

	ok, err := c.PolicyDel(ctx, "api")
	require.NoError(t, err)
	assert.True(t, ok)
	_, err = c.PolicyGet(ctx, "api")
	require.ErrorIs(t, err, client.ErrNoPolicy)
	_, err = c.Check(ctx, "api", "carol")
	require.ErrorContains(t, err, "no such policy")
}

// TestRing: a go-redis Ring spreads keys over two servers; each key's limit holds.
func TestRing(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": startRlstore(t), "b": startRlstore(t)}})
	t.Cleanup(func() { _ = ring.Close() })
	c, ctx := client.New(ring), context.Background()
	for _, key := range []string{"alice", "bob", "carol", "dave"} {
		for i := range 3 {
			d, err := c.Slide(ctx, key, 2, time.Minute)
			require.NoError(t, err)
			assert.Equal(t, i < 2, d.Allowed, "%s request %d", key, i+1)
		}
	}
}

func TestHeadersLegacy(t *testing.T) {
	d := client.Decision{Allowed: false, Limit: 100, Remaining: 0, Wait: 1500 * time.Millisecond, Reset: 30 * time.Second, Window: time.Minute}
	h := d.Headers(client.HeaderOptions{Name: `we"ird`, Legacy: true})
	assert.Equal(t, `"we\"ird";q=100;w=60`, h.Get("RateLimit-Policy"))
	assert.Equal(t, `"we\"ird";r=0;t=30`, h.Get("RateLimit"))
	assert.Equal(t, "2", h.Get("Retry-After"), "rounded up, never early")
	assert.Equal(t, "100", h.Get("X-RateLimit-Limit"))
	assert.Equal(t, "0", h.Get("X-RateLimit-Remaining"))
	assert.NotEmpty(t, h.Get("X-RateLimit-Reset"))
	d.Allowed, d.Wait = true, 0
	assert.Empty(t, d.Headers(client.HeaderOptions{}).Get("Retry-After"))
}

// TestTypedErrors: replies that come from the caller's configuration are
// typed apart from outages.
func TestTypedErrors(t *testing.T) {
	c, ctx := newClient(t), context.Background()
	_, err := c.Slide(ctx, "s", 5, time.Minute)
	require.NoError(t, err)
	_, err = c.Token(ctx, "s", 5, 1, time.Second)
	assert.ErrorIs(t, err, client.ErrWrongType)
	assert.True(t, client.IsConfigError(err))
	_, err = c.Log(ctx, "l", 5000, time.Minute)
	assert.ErrorIs(t, err, client.ErrBadArgs)
	assert.ErrorContains(t, err, "limit must be between 1 and 4000")
	_, err = c.Check(ctx, "nope", "k")
	assert.ErrorIs(t, err, client.ErrNoPolicy)
	assert.True(t, client.IsConfigError(err))
	_, err = c.Slide(ctx, "s", 5, time.Minute, client.Cost(0))
	assert.ErrorIs(t, err, client.ErrBadArgs, "Cost(0) is an error, not a silent 1")
	assert.False(t, client.IsConfigError(context.DeadlineExceeded))
}

// TestHeadersPerAlgorithm: RateLimit-Policy advertises each algorithm's quota
// as draft-ietf-httpapi-ratelimit-headers defines it: q units per w seconds,
// the rate a client can keep up. A bucket's q is its capacity and w the time
// a full refill takes, so TOKEN 100 per 10 per 1 s is q=100;w=10, not
// q=100;w=1 (ten times the sustainable rate). A policy lists every rule.
func TestHeadersPerAlgorithm(t *testing.T) {
	c, ctx := newClient(t), context.Background()
	policy := func(d client.Decision, err error) string {
		require.NoError(t, err)
		return d.Headers(client.HeaderOptions{Name: "api"}).Get("RateLimit-Policy")
	}
	assert.Equal(t, `"api";q=3;w=10`, policy(c.Slide(ctx, "s", 3, 10*time.Second)))
	assert.Equal(t, `"api";q=3;w=60`, policy(c.Fixed(ctx, "f", 3, time.Minute)))
	assert.Equal(t, `"api";q=3;w=2`, policy(c.Log(ctx, "l", 3, 1500*time.Millisecond)), "w rounded up: never a faster rate than the real one")
	assert.Equal(t, `"api";q=100;w=10`, policy(c.Token(ctx, "t", 100, 10, time.Second)))
	assert.Equal(t, `"api";q=5;w=10`, policy(c.Leaky(ctx, "q", 5, 1, 2*time.Second)))
	assert.Equal(t, `"api";q=5;w=10`, policy(c.Throttle(ctx, "g", 4, 1, 2*time.Second)))

	require.NoError(t, c.PolicySet(ctx, "p", client.Policy{Rules: []client.Rule{
		{Algorithm: "SLIDE", Limit: 10, Window: time.Minute},
		{Algorithm: "TOKEN", Limit: 100, Rate: 10, Window: time.Second},
		{Algorithm: "LOG", Limit: 2, Window: 1500 * time.Millisecond},
	}}))
	rules, err := c.PolicyRules(ctx, "p")
	require.NoError(t, err)
	d, err := c.Check(ctx, "p", "k")
	require.NoError(t, err)
	require.Equal(t, 2, d.Rule)
	h := d.Headers(client.HeaderOptions{Name: "p", Rules: rules})
	assert.Equal(t, `"p-0";q=10;w=60, "p-1";q=100;w=10, "p-2";q=2;w=2`, h.Get("RateLimit-Policy"))
	assert.Equal(t, `"p-2";r=1;t=2`, h.Get("RateLimit"), "the binding rule")
}
