package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLeases(t *testing.T) {
	c, ctx := newClient(t), context.Background()
	l, err := c.Acquire(ctx, "jobs", 2, time.Minute, "a")
	require.NoError(t, err)
	assert.InDelta(t, float64(time.Minute), float64(l.Reset), float64(2*time.Millisecond), "ends are kept to the millisecond")
	l.Reset = 0
	assert.Equal(t, client.Lease{Allowed: true, ID: "a", Limit: 2, InFlight: 1}, l)
	gen, err := c.Acquire(ctx, "jobs", 2, 1500*time.Millisecond, "")
	require.NoError(t, err)
	assert.True(t, gen.Allowed)
	assert.Len(t, gen.ID, 24)
	l, err = c.Acquire(ctx, "jobs", 2, time.Minute, "c", client.Cost(1))
	require.NoError(t, err)
	assert.False(t, l.Allowed)
	assert.Positive(t, l.Wait)
	h := http.Header{}
	l.SetHeaders(h, "jobs")
	assert.Equal(t, `"jobs";q=2;qu="concurrent-requests"`, h.Get("RateLimit-Policy"))
	assert.Equal(t, `"jobs";r=0`, h.Get("RateLimit"))
	assert.Equal(t, "2", h.Get("Retry-After"))

	ok, err := c.Renew(ctx, "jobs", gen.ID, time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.Release(ctx, "jobs", gen.ID)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.Release(ctx, "jobs", gen.ID)
	require.NoError(t, err)
	assert.False(t, ok, "a second release")
}

func TestReservations(t *testing.T) {
	c, ctx := newClient(t), context.Background()
	rule := client.Rule{Algorithm: "TOKEN", Limit: 1000, Rate: 1000, Window: time.Minute}
	r, err := c.Reserve(ctx, "llm", rule, 600, 30*time.Second, "r1")
	require.NoError(t, err)
	assert.True(t, r.Allowed)
	assert.Equal(t, "r1", r.ID)
	assert.Equal(t, int64(400), r.Remaining)
	ok, err := c.Commit(ctx, "llm", "r1", 100)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.Commit(ctx, "llm", "r1", 100)
	require.NoError(t, err)
	assert.False(t, ok)
	r, err = c.Reserve(ctx, "llm", rule, 50, time.Minute, "")
	require.NoError(t, err)
	ok, err = c.Cancel(ctx, "llm", r.ID)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.Refund(ctx, "llm", 10)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.RefundRule(ctx, "llm", rule, 1000)
	require.NoError(t, err)
	assert.True(t, ok)
	r, err = c.Reserve(ctx, "llm", rule, 1000, time.Minute, "")
	require.NoError(t, err)
	assert.True(t, r.Allowed, "full again")
	_, err = c.RefundRule(ctx, "llm", client.Rule{Algorithm: "FIXED", Limit: 10, Window: time.Minute}, 1)
	assert.Error(t, err, "a TOKEN key refunded as FIXED: WRONGTYPE")
}

func TestPolicyReservations(t *testing.T) {
	rdb, ctx := redis.NewClient(&redis.Options{Addr: startRlstore(t)}), context.Background()
	t.Cleanup(func() { _ = rdb.Close() })
	c := client.New(rdb)
	require.NoError(t, rdb.Do(ctx, "RL.POLICY", "SET", "up", "FIXED", 10_000_000_000, "1d", "TOKEN", 1000, 1000, "1m").Err())
	r, err := c.ReservePolicy(ctx, "acme", "up", 600, time.Minute, "u1")
	require.NoError(t, err)
	assert.True(t, r.Allowed)
	assert.Equal(t, "u1", r.ID)
	assert.Equal(t, int64(400), r.Remaining, "the token rule binds")
	ok, err := c.CommitPolicy(ctx, "acme", "up", "u1", 100)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = c.CommitPolicy(ctx, "acme", "up", "u1", 100)
	require.NoError(t, err)
	assert.False(t, ok, "a second commit")
	r, err = c.ReservePolicy(ctx, "acme", "up", 50, time.Minute, "")
	require.NoError(t, err)
	ok, err = c.CancelPolicy(ctx, "acme", "up", r.ID)
	require.NoError(t, err)
	assert.True(t, ok)
}
