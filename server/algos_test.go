package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFixedSteps(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		walk(t, clk, c, "RL.FIXED", []wireStep{
			{0, slide(2, "1m"), [5]int64{1, 2, 1, 0, 60000}},
			{30 * time.Second, slide(2, "60", "PEEK"), [5]int64{1, 2, 0, 0, 30000}},
			{30 * time.Second, slide(2, "60"), [5]int64{1, 2, 0, 0, 30000}},
			{45 * time.Second, slide(2, "60"), [5]int64{0, 2, 0, 15000, 15000}},
			{45 * time.Second, slide(2, "60", "COST", 3), [5]int64{0, 2, 0, -1, 15000}},
			{time.Minute, slide(2, "60", "COST", 2), [5]int64{1, 2, 0, 0, 60000}}, // the next window
			{time.Minute, slide(3, "60"), [5]int64{1, 3, 0, 0, 60000}},            // raising the limit frees room
		})
	})
}

func TestLogSteps(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		walk(t, clk, c, "RL.LOG", []wireStep{
			{0, slide(2, "1s"), [5]int64{1, 2, 1, 0, 1000}},
			{400 * time.Millisecond, slide(2, "1s"), [5]int64{1, 2, 0, 0, 1000}},
			{999 * time.Millisecond, slide(2, "1s"), [5]int64{0, 2, 0, 1, 401}},
			{time.Second, slide(2, "1s", "PEEK"), [5]int64{1, 2, 0, 0, 1000}},
			{time.Second, slide(2, "1s", "COST", 2), [5]int64{0, 2, 1, 400, 400}},
			{time.Second, slide(2, "1s", "COST", 3), [5]int64{0, 2, 1, -1, 400}},
		})
	})
}

func TestLeakySteps(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		walk(t, clk, c, "RL.LEAKY", []wireStep{
			{0, token(3, 2, "1s"), [5]int64{1, 3, 2, 0, 500}},
			{0, token(3, 2, "1s"), [5]int64{1, 3, 1, 500, 1000}}, // admitted, to proceed in 500 ms
			{0, token(3, 2, "1s", "PEEK"), [5]int64{1, 3, 0, 1000, 1500}},
			{0, token(3, 2, "1s", "COST", 2), [5]int64{0, 3, 1, 500, 1000}},
			{0, token(3, 2, "1s", "COST", 4), [5]int64{0, 3, 1, -1, 1000}},
			{250 * time.Millisecond, token(3, 2, "1s", "COST", 2), [5]int64{0, 3, 1, 250, 750}},
			{250 * time.Millisecond, token(3, 2, "1s"), [5]int64{1, 3, 0, 750, 1250}},
		})
	})
}

func TestAlgoErrors(t *testing.T) {
	const notInt = "ERR value is not an integer or out of range"
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"RL.FIXED", "k", 10}, "ERR wrong number of arguments for 'rl.fixed' command"},
		{[]any{"RL.LOG", "k", 10}, "ERR wrong number of arguments for 'rl.log' command"},
		{[]any{"RL.LEAKY", "k", 10, 1}, "ERR wrong number of arguments for 'rl.leaky' command"},
		{[]any{"CL.THROTTLE", "k", 1, 1}, "ERR wrong number of arguments for 'cl.throttle' command"},
		{[]any{"CL.THROTTLE", "k", 1, 1, 1, 1, 1}, "ERR wrong number of arguments for 'cl.throttle' command"},
		{[]any{"RL.FIXED", "k", "x", 60}, notInt},
		{[]any{"RL.FIXED", "k", 0, 60}, "ERR limit must be at least 1"},
		{[]any{"RL.FIXED", "k", 10, "0"}, "ERR window must be between 1ms and 3650d"},
		{[]any{"RL.FIXED", "k", 10, "3651d"}, "ERR window must be between 1ms and 3650d"},
		{[]any{"RL.FIXED", "k", 10, "1.5"}, "ERR window is not a duration or out of range"},
		{[]any{"RL.FIXED", "k", 10, 60, "COST", 0}, "ERR cost must be at least 1"},
		{[]any{"RL.FIXED", "k", 10, 60, "BOGUS"}, "ERR syntax error"},
		{[]any{"RL.LOG", "k", 0, 60}, "ERR limit must be between 1 and 4000"},
		{[]any{"RL.LOG", "k", 4001, 60}, "ERR limit must be between 1 and 4000"},
		{[]any{"RL.LOG", "k", 10, "0ms"}, "ERR window must be between 1ms and 3650d"},
		{[]any{"RL.LOG", "k", 10, 60, "COST"}, "ERR syntax error"},
		{[]any{"RL.LEAKY", "k", 0, 1, 1}, "ERR capacity must be at least 1"},
		{[]any{"RL.LEAKY", "k", 1, 0, 1}, "ERR rate must be at least 1"},
		{[]any{"RL.LEAKY", "k", 1, 1, 0}, "ERR period must be between 1ms and 3650d"},
		{[]any{"RL.LEAKY", "k", 1, 2000000, "1ms"}, "ERR rate is too high for the period: at most one token per nanosecond"},
		{[]any{"RL.LEAKY", "k", 1, 1, "x"}, "ERR period is not a duration or out of range"},
		{[]any{"RL.LEAKY", "k", 1, 1, 1, "COST", -1}, "ERR cost must be at least 1"},
		{[]any{"RL.FIXED", "\xffpx", 10, 60}, "ERR keys starting with \\xffp are reserved for policy state"},
		{[]any{"CL.THROTTLE", "\xffpx", 1, 1, 1}, "ERR keys starting with \\xffp are reserved for policy state"},
		{[]any{"CL.THROTTLE", "k", "1.5", 1, 1}, notInt},
		{[]any{"CL.THROTTLE", "k", " 1", 1, 1}, notInt},
		{[]any{"CL.THROTTLE", "k", "1e3", 1, 1}, notInt},
		{[]any{"CL.THROTTLE", "k", "", 1, 1}, notInt},
		{[]any{"CL.THROTTLE", "k", "+", 1, 1}, notInt},
		{[]any{"CL.THROTTLE", "k", 1, 1, 1, "9223372036854775808"}, notInt},
		{[]any{"CL.THROTTLE", "k", -1, 1, 1}, "ERR max_burst must be at least 0 and small enough that a full burst refills within 36500d"},
		{[]any{"CL.THROTTLE", "k", "9223372036854775807", 1, 60}, "ERR max_burst must be at least 0 and small enough that a full burst refills within 36500d"},
		{[]any{"CL.THROTTLE", "k", 1, 0, 1}, "ERR count must be at least 1 and at most one per nanosecond of the period"},
		{[]any{"CL.THROTTLE", "k", 1, -5, 1}, "ERR count must be at least 1 and at most one per nanosecond of the period"},
		{[]any{"CL.THROTTLE", "k", 1, 2000000000, 1}, "ERR count must be at least 1 and at most one per nanosecond of the period"},
		{[]any{"CL.THROTTLE", "k", 1, 1, 0}, "ERR period must be between 1 and 315360000 seconds"},
		{[]any{"CL.THROTTLE", "k", 1, 1, -1}, "ERR period must be between 1 and 315360000 seconds"},
		{[]any{"CL.THROTTLE", "k", 1, 1, "9223372036854775807"}, "ERR period must be between 1 and 315360000 seconds"},
	}
	for _, tc := range cases {
		wantErrReply(t, c, tc.want, tc.args...)
	}
	assert.EqualValues(t, 0, wantInt(t, c, "DBSIZE"), "no error created a key")
}

// TestWrongTypeMatrix creates a key with every algorithm and drives it with every other.
func TestWrongTypeMatrix(t *testing.T) {
	cmds := map[string][]any{
		"slide": {"RL.SLIDE", 5, 60},
		"token": {"RL.TOKEN", 5, 1, 1},
		"fixed": {"RL.FIXED", 5, 60},
		"log":   {"RL.LOG", 5, 60},
		"leaky": {"RL.LEAKY", 5, 1, 1},
	}
	throttle := []any{"CL.THROTTLE", 4, 1, 1}
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		for have, hargs := range cmds {
			key := "key:" + have
			require.NoError(t, c.Do(ctx, withKey(hargs, key)...).Err())
			assert.Equal(t, have, c.Type(ctx, key).Val())
			for use, uargs := range cmds {
				err := c.Do(ctx, withKey(uargs, key)...).Err()
				if use == have {
					assert.NoError(t, err, "%s on a %s key", use, have)
				} else if assert.Error(t, err, "%s on a %s key", use, have) {
					assert.Equal(t, decide.ErrWrongType, err.Error())
				}
			}
			err := c.Do(ctx, withKey(throttle, key)...).Err()
			if have == "token" {
				assert.NoError(t, err)
			} else if assert.Error(t, err, "CL.THROTTLE on a %s key", have) {
				assert.Equal(t, decide.ErrWrongType, err.Error())
			}
		}
	})
}

func withKey(args []any, key string) []any {
	return append([]any{args[0], key}, args[1:]...)
}

func TestThrottleReadmeExample(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		ctx := ctxT(t)
		// redis-cell's README: 15 burst, 30 per 60 s. Its first reply is [0, 16, 15, -1, 2].
		assert.Equal(t, []int64{0, 16, 15, -1, 2}, throttle(t, c, "user123", 15, 30, 60))
		assert.Equal(t, []int64{0, 16, 14, -1, 4}, throttle(t, c, "user123", "+15", "+30", "060", "+1"))
		// Peek: quantity 0 changes nothing and, on a new key, creates none.
		assert.Equal(t, []int64{0, 16, 14, -1, 4}, throttle(t, c, "user123", 15, 30, 60, 0))
		assert.Equal(t, []int64{0, 16, 16, -1, 0}, throttle(t, c, "fresh", 15, 30, 60, 0))
		assert.EqualValues(t, 0, c.Exists(ctx, "fresh").Val())
		// A refund never moves the state into the past: at most a full bucket.
		assert.Equal(t, []int64{0, 16, 16, -1, 0}, throttle(t, c, "user123", 15, 30, 60, -100))
		assert.EqualValues(t, 0, c.Exists(ctx, "user123").Val(), "a full bucket restricts nothing")
		assert.Equal(t, []int64{0, 16, 16, -1, 0}, throttle(t, c, "fresh", 15, 30, 60, "-9223372036854775808"))
		assert.EqualValues(t, 0, c.Exists(ctx, "fresh").Val(), "a refund creates no key")
		// Exhaust the bucket, then be limited.
		assert.Equal(t, []int64{0, 16, 0, -1, 32}, throttle(t, c, "u", 15, 30, 60, 16))
		assert.Equal(t, []int64{1, 16, 0, 2, 32}, throttle(t, c, "u", 15, 30, 60))
		assert.Equal(t, []int64{1, 16, 0, -1, 32}, throttle(t, c, "u", 15, 30, 60, 17), "more than the limit never fits")
		assert.Equal(t, []int64{1, 16, 0, -1, 32}, throttle(t, c, "u", 15, 30, 60, "9223372036854775807"))
		clk.Set(2 * time.Second)
		assert.Equal(t, []int64{0, 16, 0, -1, 32}, throttle(t, c, "u", 15, 30, 60))
		clk.Set(2*time.Second + 500*time.Microsecond)
		assert.Equal(t, []int64{1, 16, 0, 2, 32}, throttle(t, c, "u", 15, 30, 60), "2.0 s less 0.5 ms: the ms part is 0, so 2 s, not 3")
		// CL.THROTTLE and RL.TOKEN share the state.
		assert.Equal(t, [5]int64{0, 16, 0, 2000, 32000}, wantDecision(t, c, "RL.TOKEN", "u", 16, 30, 60))
		assert.Equal(t, "token", c.Type(ctx, "u").Val())
	})
}

func throttle(t *testing.T, c *redis.Client, key string, args ...any) []int64 {
	t.Helper()
	v, err := c.Do(context.Background(), append([]any{"CL.THROTTLE", key}, args...)...).Int64Slice()
	require.NoError(t, err, args)
	return v
}

// TestHammerEveryAlgorithm runs many connections against one key per
// algorithm on a frozen clock: exactly the limit is admitted.
func TestHammerEveryAlgorithm(t *testing.T) {
	const limit, workers, each = 300, 30, 20
	cases := map[string][]any{
		"slide":    {"RL.SLIDE", "hot", limit, 60},
		"token":    {"RL.TOKEN", "hot", limit, 1, "1h"},
		"fixed":    {"RL.FIXED", "hot", limit, "1h"},
		"log":      {"RL.LOG", "hot", limit, "1h"},
		"leaky":    {"RL.LEAKY", "hot", limit, 1, "1h"},
		"throttle": {"CL.THROTTLE", "hot", limit - 1, 1, 3600},
		"policy":   {"RL.CHECK", "hotpol", "hot"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, addr := startServer(t, Config{Clock: newStepClock().Now})
			clients := []*redis.Client{newClient(t, addr, 3), newClient(t, addr, 2), newClient(t, addr, 3), newClient(t, addr, 2)}
			if name == "policy" {
				require.NoError(t, clients[0].Do(ctxT(t), "RL.POLICY", "SET", "hotpol",
					"FIXED", limit, "1h", "LOG", limit+5, "1h", "TOKEN", limit+1, 1, "1h", "SLIDE", limit+2, 60).Err())
			}
			var admitted, replies atomic.Int64
			start := make(chan struct{})
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					c := clients[w%len(clients)]
					<-start
					for range each {
						v, err := c.Do(context.Background(), args...).Int64Slice()
						if assert.NoError(t, err) && assert.GreaterOrEqual(t, len(v), 5) {
							ok := v[0]
							if name == "throttle" {
								ok = 1 - v[0]
							}
							admitted.Add(ok)
							replies.Add(1)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			assert.Equal(t, int64(workers*each), replies.Load())
			assert.Equal(t, int64(limit), admitted.Load())
		})
	}
}
