package client_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkSlide compares a typed call with the same command sent through a
// bare go-redis Do and parsed by hand: allocs/op should be equal.
func BenchmarkSlide(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: startRlstore(b)})
	b.Cleanup(func() { _ = rdb.Close() })
	c, ctx := client.New(rdb), context.Background()
	b.Run("client.Slide", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := c.Slide(ctx, keys[i%len(keys)], 1000000, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("redis.Do", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := bareSlide(ctx, rdb, keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var keys = func() []string {
	k := make([]string, 64)
	for i := range k {
		k[i] = "bench:" + strconv.Itoa(i)
	}
	return k
}()

// bareSlide is go-redis's own cost for the command: Do, and the reply read
// by type assertion, which allocates nothing.
func bareSlide(ctx context.Context, rdb *redis.Client, key string) (bool, error) {
	v, err := rdb.Do(ctx, "RL.SLIDE", key, 1000000, 60).Result()
	if err != nil {
		return false, err
	}
	f, _ := v.([]any)
	return len(f) == 5 && f[0] == int64(1), nil
}

// TestSlideAllocs guards the benchmark's claim: a typed call allocates no more
// than go-redis does for the bare command.
func TestSlideAllocs(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: startRlstore(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	c, ctx := client.New(rdb), context.Background()
	_, err := c.Slide(ctx, "warm", 1000000, time.Minute) // dial outside the count
	require.NoError(t, err)
	typed := testing.AllocsPerRun(200, func() { _, _ = c.Slide(ctx, "a", 1000000, time.Minute) })
	bare := testing.AllocsPerRun(200, func() { _, _ = bareSlide(ctx, rdb, "a") })
	t.Logf("allocs per call: client.Slide %.1f, bare Do %.1f", typed, bare)
	assert.LessOrEqual(t, typed, bare+0.5)
}

// TestTokenCostAllocs: options and a longer command cost nothing extra either.
func TestTokenCostAllocs(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: startRlstore(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	c, ctx := client.New(rdb), context.Background()
	_, err := c.Token(ctx, "warm", 1000000, 1000000, time.Minute, client.Cost(1000))
	require.NoError(t, err)
	typed := testing.AllocsPerRun(200, func() {
		_, _ = c.Token(ctx, "a", 1000000, 1000000, time.Minute, client.Cost(1000))
	})
	bare := testing.AllocsPerRun(200, func() {
		_, _ = rdb.Do(ctx, "RL.TOKEN", "a", 1000000, 1000000, 60, "COST", 1000).Result()
	})
	t.Logf("allocs per call: client.Token %.1f, bare Do %.1f", typed, bare)
	assert.LessOrEqual(t, typed, bare+0.5)
}
