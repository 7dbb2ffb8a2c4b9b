package client_test

import (
	"context"
	"fmt"
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

// bareSlide is go-redis's own cost for the command Slide sends (a limit
// above MaxLogLimit: RL.SLIDE over the window plus a second): Do, and the
// reply read by type assertion, which allocates nothing.
func bareSlide(ctx context.Context, rdb *redis.Client, key string) (bool, error) {
	v, err := rdb.Do(ctx, "RL.SLIDE", key, 1000000, 61).Result()
	if err != nil {
		return false, err
	}
	f, _ := v.([]any)
	return len(f) == 5 && f[0] == int64(1), nil
}

// pairedAllocs measures the allocations per call of typed, then of bare,
// runs calls each, up to three times, and returns the first pair in which
// typed allocates at most slack more than bare (else the last pair).
// testing.AllocsPerRun counts the whole process's allocations, and on a
// loaded machine a call may now and then time out and make go-redis dial
// again, or a window may turn between the two measurements and change the
// replies' shape; an allocation the typed call itself adds is in every pair.
func pairedAllocs(runs int, slack float64, typed, bare func()) (float64, float64) {
	var t, b float64
	for range 3 {
		t = testing.AllocsPerRun(runs, typed)
		b = testing.AllocsPerRun(runs, bare)
		if t <= b+slack {
			break
		}
	}
	return t, b
}

// TestSlideAllocs guards the benchmark's claim: a typed call allocates no more
// than go-redis does for the bare command.
func TestSlideAllocs(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: startRlstore(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	c, ctx := client.New(rdb), context.Background()
	_, err := c.Slide(ctx, "warm", 1000000, time.Minute) // dial outside the count
	require.NoError(t, err)
	typed, bare := pairedAllocs(200, 0.5,
		func() { _, _ = c.Slide(ctx, "a", 1000000, time.Minute) },
		func() { _, _ = bareSlide(ctx, rdb, "a") })
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
	typed, bare := pairedAllocs(200, 0.5, func() {
		_, _ = c.Token(ctx, "a", 1000000, 1000000, time.Minute, client.Cost(1000))
	}, func() {
		_, _ = rdb.Do(ctx, "RL.TOKEN", "a", 1000000, 1000000, 60, "COST", 1000).Result()
	})
	t.Logf("allocs per call: client.Token %.1f, bare Do %.1f", typed, bare)
	assert.LessOrEqual(t, typed, bare+0.5)
}

// TestAllocsEveryCombination checks the documented allocation claim for each
// algorithm with small (< 256) and large integers, options and windows: a
// typed call allocates no more than Do with the same constant arguments,
// windows of milliseconds included. Large integers here are distinct mod 64,
// as the docs require.
func TestAllocsEveryCombination(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: startRlstore(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	c, ctx := client.New(rdb), context.Background()
	type call struct {
		name  string
		typed func()
		bare  []any
		extra float64
	}
	var calls []call
	for _, lim := range []int64{100, 1000000} {
		for _, win := range []time.Duration{time.Minute, 1500 * time.Millisecond} {
			winArg, extra := any(int64(win/time.Second)), 0.0
			if win%time.Second != 0 {
				winArg = "1500ms"
			}
			for _, opts := range [][]client.Option{nil, {client.Cost(2)}, {client.Cost(1001), client.Peek()}} {
				var tail []any
				switch len(opts) {
				case 1:
					tail = []any{"COST", 2}
				case 2:
					tail = []any{"COST", 1001, "PEEK"}
				}
				l, w, o := lim, win, opts
				name := fmt.Sprintf("limit %d window %v opts %d", lim, win, len(opts))
				slide := append([]any{"RL.LOG", "s", lim, winArg}, tail...) // Slide up to MaxLogLimit
				if lim > client.MaxLogLimit {
					slide = append([]any{"RL.SLIDE", "S", lim, int64((w+time.Second-1)/time.Second) + 1}, tail...)
				}
				calls = append(calls, call{"Slide " + name, func() { _, _ = c.Slide(ctx, slide[1].(string), l, w, o...) }, slide, extra})
				calls = append(calls,
					call{"Log " + name, func() { _, _ = c.Log(ctx, "l", min(l, 4000), w, o...) }, append([]any{"RL.LOG", "l", min(lim, 4000), winArg}, tail...), extra},
					call{"Fixed " + name, func() { _, _ = c.Fixed(ctx, "f", l, w, o...) }, append([]any{"RL.FIXED", "f", lim, winArg}, tail...), extra},
					call{"Token " + name, func() { _, _ = c.Token(ctx, "t", l, l+1, w, o...) }, append([]any{"RL.TOKEN", "t", lim, lim + 1, winArg}, tail...), extra},
				)
			}
		}
	}
	for _, k := range calls {
		k.typed() // dial and box outside the count
		typed, bare := pairedAllocs(50, k.extra+1, k.typed, func() { _, _ = doConst(ctx, rdb, k.bare).Result() })
		// +1: doConst measured one allocation below Do with literal arguments,
		// which a typed call matches exactly (TestSlideAllocs).
		assert.LessOrEqual(t, typed, bare+k.extra+1, "%s: typed %.1f, bare Do %.1f", k.name, typed, bare)
	}
}

// doConst sends a as Do does with constant arguments: each already boxed,
// listed in the call, so Do builds its variadic slice as it would for constants.
func doConst(ctx context.Context, rdb *redis.Client, a []any) *redis.Cmd {
	switch len(a) {
	case 4:
		return rdb.Do(ctx, a[0], a[1], a[2], a[3])
	case 5:
		return rdb.Do(ctx, a[0], a[1], a[2], a[3], a[4])
	case 6:
		return rdb.Do(ctx, a[0], a[1], a[2], a[3], a[4], a[5])
	case 7:
		return rdb.Do(ctx, a[0], a[1], a[2], a[3], a[4], a[5], a[6])
	default:
		return rdb.Do(ctx, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7])
	}
}
