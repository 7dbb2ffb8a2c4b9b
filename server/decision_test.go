package server

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireStep is one request of a step table driven through a real server:
// the clock is set to t0+at, then name key args... is sent.
type wireStep struct {
	at   time.Duration
	args []any // after the command name and key
	want [5]int64
}

func TestSlideSteps(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		walk(t, clk, c, "RL.SLIDE", []wireStep{
			{0, slide(3, "10"), [5]int64{1, 3, 2, 0, 10000}},
			{500 * time.Millisecond, slide(3, "10s", "COST", 2), [5]int64{1, 3, 0, 0, 9500}},
			{time.Second, slide(3, "10"), [5]int64{0, 3, 0, 9000, 9000}},
			{9999*time.Millisecond + 500*time.Microsecond, slide(3, "10"), [5]int64{0, 3, 0, 1, 1}}, // 0.5 ms rounds up
			{9999 * time.Millisecond, slide(3, "10", "COST", 4), [5]int64{0, 3, 0, -1, 1}},          // never; the clock stepped back
			{10 * time.Second, slide(3, "10"), [5]int64{1, 3, 2, 0, 10000}},
			{10 * time.Second, slide(3, "10000ms", "PEEK", "COST", 2), [5]int64{1, 3, 0, 0, 10000}},
			{10 * time.Second, slide(3, "10", "cost", 3, "peek"), [5]int64{0, 3, 2, 10000, 10000}},
		})
	})
}

func TestTokenSteps(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		walk(t, clk, c, "RL.TOKEN", []wireStep{
			{0, token(2, 1, "1s"), [5]int64{1, 2, 1, 0, 1000}},
			{0, token(2, 1, "1000ms"), [5]int64{1, 2, 0, 0, 2000}},
			{0, token(2, 1, "1"), [5]int64{0, 2, 0, 1000, 2000}},
			{500 * time.Millisecond, token(2, 1, "1s"), [5]int64{0, 2, 0, 500, 1500}},
			{500*time.Millisecond + time.Microsecond, token(2, 1, "1s"), [5]int64{0, 2, 0, 500, 1500}}, // 499.999 ms rounds up
			{time.Second, token(2, 1, "1s"), [5]int64{1, 2, 0, 0, 2000}},
			{time.Second, token(2, 1, "1s", "COST", 3), [5]int64{0, 2, 0, -1, 2000}},
			{3 * time.Second, token(2, 1, "1s", "PEEK"), [5]int64{1, 2, 1, 0, 1000}},
			{3 * time.Second, token(2, 1, "1s", "COST", 2), [5]int64{1, 2, 0, 0, 2000}},
			{3 * time.Second, token(2, 4, "4s", "COST", 1), [5]int64{0, 2, 0, 1000, 2000}}, // same rate, written differently
		})
	})
}

func slide(limit int64, window string, opts ...any) []any {
	return append([]any{limit, window}, opts...)
}

func token(capacity, rate int64, period string, opts ...any) []any {
	return append([]any{capacity, rate, period}, opts...)
}

// walk sends each step to key "k" and checks its reply.
func walk(t *testing.T, clk *stepClock, c *redis.Client, name string, steps []wireStep) {
	t.Helper()
	for i, st := range steps {
		clk.Set(st.at)
		call := fmt.Sprintf("%s(t%d=%v, %v)", name, i, st.at, st.args)
		got := wantDecision(t, c, append([]any{name, "k"}, st.args...)...)
		assert.Equalf(t, st.want, got, "%s = %s, want %s", call, verdict(got), verdict(st.want))
	}
}

func verdict(d [5]int64) string {
	if d[0] == 1 {
		return fmt.Sprintf("allowed %v", d)
	}
	return fmt.Sprintf("denied %v", d)
}

func TestDecisionErrors(t *testing.T) {
	const (
		notInt = "ERR value is not an integer or out of range"
		syntax = "ERR syntax error"
	)
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"RL.SLIDE"}, "ERR wrong number of arguments for 'rl.slide' command"},
		{[]any{"RL.SLIDE", "k", 10}, "ERR wrong number of arguments for 'rl.slide' command"},
		{[]any{"RL.TOKEN", "k", 10, 1}, "ERR wrong number of arguments for 'rl.token' command"},
		{[]any{"RL.SLIDE", "k", "abc", 60}, notInt},
		{[]any{"RL.SLIDE", "k", "10.5", 60}, notInt},
		{[]any{"RL.SLIDE", "k", " 10", 60}, notInt},
		{[]any{"RL.SLIDE", "k", "+10", 60}, notInt},
		{[]any{"RL.SLIDE", "k", "010", 60}, notInt},
		{[]any{"RL.SLIDE", "k", "99999999999999999999", 60}, notInt},
		{[]any{"RL.SLIDE", "k", 0, 60}, "ERR limit must be between 1 and 4294967295"},
		{[]any{"RL.SLIDE", "k", -1, 60}, "ERR limit must be between 1 and 4294967295"},
		{[]any{"RL.SLIDE", "k", 4294967296, 60}, "ERR limit must be between 1 and 4294967295"},
		{[]any{"RL.SLIDE", "k", 10, "abc"}, "ERR window is not a duration or out of range"},
		{[]any{"RL.SLIDE", "k", 10, "60x"}, "ERR window is not a duration or out of range"},
		{[]any{"RL.SLIDE", "k", 10, "-60"}, "ERR window is not a duration or out of range"},
		{[]any{"RL.SLIDE", "k", 10, "10M"}, "ERR window is not a duration or out of range"},
		{[]any{"RL.SLIDE", "k", 10, "1.5s"}, "ERR window is not a duration or out of range"},
		{[]any{"RL.SLIDE", "k", 10, "106752d"}, "ERR window is not a duration or out of range"}, // overflows int64 ns
		{[]any{"RL.SLIDE", "k", 10, "1500ms"}, "ERR window must be a whole number of seconds"},
		{[]any{"RL.SLIDE", "k", 10, "0"}, "ERR window must be between 1s and 3650d"},
		{[]any{"RL.SLIDE", "k", 10, "3651d"}, "ERR window must be between 1s and 3650d"},
		{[]any{"RL.SLIDE", "k", 10, 60, "COST", 0}, "ERR cost must be at least 1"},
		{[]any{"RL.SLIDE", "k", 10, 60, "COST", -3}, "ERR cost must be at least 1"},
		{[]any{"RL.SLIDE", "k", 10, 60, "COST", "x"}, notInt},
		{[]any{"RL.SLIDE", "k", 10, 60, "COST"}, syntax},
		{[]any{"RL.SLIDE", "k", 10, 60, "PEEK", "COST"}, syntax},
		{[]any{"RL.SLIDE", "k", 10, 60, "FOO"}, syntax},
		{[]any{"RL.SLIDE", "k", 10, 60, "PEEKS"}, syntax},
		{[]any{"RL.TOKEN", "k", 0, 1, "1s"}, "ERR capacity must be at least 1"},
		{[]any{"RL.TOKEN", "k", "x", 1, "1s"}, notInt},
		{[]any{"RL.TOKEN", "k", 10, "x", "1s"}, notInt},
		{[]any{"RL.TOKEN", "k", 10, 0, "1s"}, "ERR rate must be at least 1"},
		{[]any{"RL.TOKEN", "k", 10, -1, "1s"}, "ERR rate must be at least 1"},
		{[]any{"RL.TOKEN", "k", 10, 1, "1x"}, "ERR period is not a duration or out of range"},
		{[]any{"RL.TOKEN", "k", 10, 1, "0ms"}, "ERR period must be between 1ms and 3650d"},
		{[]any{"RL.TOKEN", "k", 10, 1, "3651d"}, "ERR period must be between 1ms and 3650d"},
		{[]any{"RL.TOKEN", "k", 10, 2000000, "1ms"}, "ERR rate is too high for the period: at most one token per nanosecond"},
		{[]any{"RL.TOKEN", "k", 1000000, 1, "100d"}, "ERR capacity is too large: refilling a full bucket must take at most 36500d"},
		{[]any{"RL.TOKEN", "k", 10, 1, "1s", "COST", 0}, "ERR cost must be at least 1"},
		{[]any{"RL.TOKEN", "k", 10, 1, "1s", "BAR"}, syntax},
	}
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		for _, tc := range cases {
			wantErrReply(t, c, tc.want, tc.args...)
		}
		assert.Equal(t, int64(0), wantInt(t, c, "DBSIZE"), "a refused command created a key")
	})
}

func TestPeekCreatesNoKey(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		assert.Equal(t, [5]int64{1, 5, 4, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 5, 60, "PEEK"))
		assert.Equal(t, [5]int64{1, 5, 4, 0, 12000}, wantDecision(t, c, "RL.TOKEN", "t", 5, 5, "1m", "PEEK"))
		assert.Equal(t, int64(0), wantInt(t, c, "EXISTS", "s", "t"))
		assert.Equal(t, int64(0), wantInt(t, c, "DBSIZE"))

		wantDecision(t, c, "RL.SLIDE", "s", 5, 60)
		assert.Equal(t, [5]int64{1, 5, 1, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 5, 60, "COST", 3, "PEEK"))
		assert.Equal(t, [5]int64{1, 5, 3, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 5, 60, "PEEK"), "a peek consumed")

		assert.Equal(t, [5]int64{1, 9, 7, 0, 1000}, wantDecision(t, c, "RL.SLIDE", "s", 9, 1, "PEEK"), "a peek decides under its own parameters")
		assert.Equal(t, int64(60000), wantInt(t, c, "PTTL", "s"), "a peek re-parameterised the key")
	})
}

func TestWrongType(t *testing.T) {
	const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		wantDecision(t, c, "RL.SLIDE", "s", 5, 60)
		wantDecision(t, c, "RL.TOKEN", "t", 5, 1, "1s")
		wantErrReply(t, c, wrongType, "RL.TOKEN", "s", 5, 1, "1s")
		wantErrReply(t, c, wrongType, "RL.TOKEN", "s", 5, 1, "1s", "PEEK")
		wantErrReply(t, c, wrongType, "RL.SLIDE", "t", 5, 60)
		wantErrReply(t, c, wrongType, "RL.SLIDE", "t", 5, 60, "PEEK")
		assert.Equal(t, [5]int64{1, 5, 3, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 5, 60), "a refused command charged the key")
	})
}

func TestReparameterise(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		wantDecision(t, c, "RL.SLIDE", "s", 2, 60, "COST", 2)
		assert.Equal(t, [5]int64{0, 2, 0, 60000, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 2, 60))
		assert.Equal(t, [5]int64{1, 4, 1, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 4, 60), "a raised limit must free room at once")
		assert.Equal(t, [5]int64{0, 1, 0, 60000, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 1, 60))
		assert.Equal(t, [5]int64{0, 4, 1, 30000, 30000}, wantDecision(t, c, "RL.SLIDE", "s", 4, 30, "COST", 2))

		wantDecision(t, c, "RL.TOKEN", "t", 2, 1, "1s", "COST", 2)
		assert.Equal(t, [5]int64{0, 2, 0, 1000, 2000}, wantDecision(t, c, "RL.TOKEN", "t", 2, 1, "1s"))
		assert.Equal(t, [5]int64{1, 4, 1, 0, 3000}, wantDecision(t, c, "RL.TOKEN", "t", 4, 1, "1s"), "a raised capacity must free room at once")
	})
}

func TestCostOverLimitNeverFits(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		assert.Equal(t, [5]int64{0, 10, 10, -1, 0}, wantDecision(t, c, "RL.SLIDE", "s", 10, 60, "COST", 11))
		assert.Equal(t, [5]int64{0, 10, 10, -1, 0}, wantDecision(t, c, "RL.TOKEN", "t", 10, 1, "1s", "COST", 11))
		assert.Equal(t, int64(0), wantInt(t, c, "EXISTS", "s", "t"), "a denial created a key")
		assert.Equal(t, [5]int64{1, 10, 0, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "s", 10, 60, "COST", 10))
		assert.Equal(t, [5]int64{1, 10, 0, 0, 10000}, wantDecision(t, c, "RL.TOKEN", "t", 10, 1, "1s", "COST", 10))
	})
}

// TestDeniedNeverConsumes hammers exhausted keys with denials, then checks that
// the quota comes back exactly when it would have without them.
func TestDeniedNeverConsumes(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		wantDecision(t, c, "RL.SLIDE", "s", 2, 10, "COST", 2)
		wantDecision(t, c, "RL.TOKEN", "t", 1, 1, "10s")
		for i := range 100 {
			clk.Set(time.Duration(i) * 99 * time.Millisecond)
			assert.Equal(t, int64(0), wantDecision(t, c, "RL.SLIDE", "s", 2, 10)[0])
			assert.Equal(t, int64(0), wantDecision(t, c, "RL.TOKEN", "t", 1, 1, "10s")[0])
		}
		clk.Set(10 * time.Second)
		assert.Equal(t, [5]int64{1, 2, 0, 0, 10000}, wantDecision(t, c, "RL.SLIDE", "s", 2, 10, "COST", 2))
		assert.Equal(t, [5]int64{1, 1, 0, 0, 10000}, wantDecision(t, c, "RL.TOKEN", "t", 1, 1, "10s"))
	})
}

func TestStoreFullIsOOM(t *testing.T) {
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	m, err := shard.New(shard.Config{MaxKeys: 1})
	require.NoError(t, err)
	clk := newStepClock()
	_, addr := startServer(t, Config{Store: m, Clock: clk.Now})
	c := newClient(t, addr, 3)
	wantDecision(t, c, "RL.SLIDE", "a", 5, 60)
	wantErrReply(t, c, oom, "RL.SLIDE", "b", 5, 60)
	wantErrReply(t, c, oom, "RL.TOKEN", "b", 5, 1, "1s")
	wantErrReply(t, c, oom, "RL.SLIDE", "b", 5, 60, "PEEK") // exactly the reply of the same call (docs/commands.md, Conventions)
	assert.Equal(t, [5]int64{0, 5, 5, -1, 0}, wantDecision(t, c, "RL.SLIDE", "b", 5, 60, "COST", 6, "PEEK"), "a denied peek needs no room")
	assert.Equal(t, [5]int64{1, 5, 3, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "a", 5, 60, "PEEK"), "an existing key needs no room")
	assert.Equal(t, [5]int64{1, 5, 3, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "a", 5, 60), "an existing key must keep working")
	require.NoError(t, c.Do(ctxT(t), "RL.POLICY", "SET", "p", "FIXED", 5, 60).Err())
	wantErrReply(t, c, oom, "RL.CHECK", "p", "a")
	wantErrReply(t, c, oom, "RL.CHECK", "p", "a", "PEEK")
}

// TestHammerAdmitsExactlyLimit runs many connections against one key on a
// frozen clock: exactly limit requests may be admitted.
func TestHammerAdmitsExactlyLimit(t *testing.T) {
	const limit, workers, each = 500, 40, 25
	cases := map[string][]any{
		"slide": {"RL.SLIDE", "hot", limit, 60},
		"token": {"RL.TOKEN", "hot", limit, 1, "1h"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, addr := startServer(t, Config{Clock: newStepClock().Now})
			clients := []*redis.Client{newClient(t, addr, 3), newClient(t, addr, 2), newClient(t, addr, 3), newClient(t, addr, 2)}
			var admitted, replies atomic.Int64
			start := make(chan struct{})
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					c := clients[w%len(clients)]
					<-start
					for range each {
						v, err := c.Do(context.Background(), args...).Int64Slice()
						if assert.NoError(t, err) && assert.Len(t, v, 5) {
							admitted.Add(v[0])
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

func TestPipeline10000(t *testing.T) {
	const n, limit = 10000, 6000
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		ctx := context.Background()
		pipe := c.Pipeline()
		cmds := make([]*redis.Cmd, n)
		for i := range cmds {
			cmds[i] = pipe.Do(ctx, "RL.SLIDE", "piped", limit, 60)
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
		for i, cmd := range cmds {
			v, err := cmd.Int64Slice()
			require.NoError(t, err)
			want := []int64{0, limit, 0, 60000, 60000}
			if i < limit {
				want = []int64{1, limit, int64(limit - 1 - i), 0, 60000}
			}
			require.Equalf(t, want, v, "pipelined command %d", i)
		}
	})
}

// TestRedisCLI drives RL.SLIDE, TYPE and PTTL through redis-cli, where it is installed.
func TestRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (apt-get install -y redis-tools)")
	}
	_, addr := startServer(t, Config{Clock: newStepClock().Now})
	host, port, _ := strings.Cut(addr, ":")
	run := func(args ...string) string {
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		require.NoErrorf(t, err, "redis-cli %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	assert.Equal(t, "1\n3\n2\n0\n60000", run("RL.SLIDE", "cli", "3", "60"))
	assert.Equal(t, "1\n3\n0\n0\n60000", run("rl.slide", "cli", "3", "1m", "COST", "2"))
	assert.Equal(t, "0\n3\n0\n60000\n60000", run("RL.SLIDE", "cli", "3", "60", "PEEK"))
	assert.Equal(t, "slide", run("TYPE", "cli"))
	assert.Equal(t, "60000", run("PTTL", "cli"))
	assert.Equal(t, "60", run("TTL", "cli"))
	assert.Equal(t, "ERR limit must be between 1 and 4294967295", run("RL.SLIDE", "cli", "0", "60"))
	assert.Equal(t, "1\n10\n9\n0\n6000", run("RL.TOKEN", "tok", "10", "1", "6s"))
	assert.Equal(t, "token", run("TYPE", "tok"))
	assert.Equal(t, "none", run("TYPE", "nope"))
	assert.Equal(t, "-2", run("PTTL", "nope"))
}

// t0 is the fake clock's origin, 2025-06-01T12:00:00Z: a whole second, so steps read as offsets.
const t0 = int64(1748779200) * int64(time.Second)

// stepClock is a fake clock that tests set while the server reads it from other goroutines.
type stepClock struct{ ns atomic.Int64 }

func newStepClock() *stepClock {
	c := &stepClock{}
	c.ns.Store(t0)
	return c
}

func (c *stepClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Set moves the clock to t0+d; d may step backwards.
func (c *stepClock) Set(d time.Duration) { c.ns.Store(t0 + int64(d)) }

// startWithClock starts a server on a fake clock at t0 and returns a client for it.
func startWithClock(t *testing.T, proto int) (*stepClock, *redis.Client) {
	t.Helper()
	clk := newStepClock()
	_, addr := startServer(t, Config{Clock: clk.Now})
	return clk, newClient(t, addr, proto)
}

// forProtocols runs fn once over RESP2 and once over RESP3.
func forProtocols(t *testing.T, fn func(t *testing.T, proto int)) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) { fn(t, proto) })
	}
}

// wantDecision sends args and returns the five-integer decision reply.
func wantDecision(t *testing.T, c *redis.Client, args ...any) [5]int64 {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Int64Slice()
	require.NoErrorf(t, err, "%v", args)
	require.Lenf(t, v, 5, "%v", args)
	return [5]int64(v)
}

func wantInt(t *testing.T, c *redis.Client, args ...any) int64 {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Int64()
	require.NoErrorf(t, err, "%v", args)
	return v
}

// wantErrReply sends args and checks that the reply is the error want.
func wantErrReply(t *testing.T, c *redis.Client, want string, args ...any) {
	t.Helper()
	err := c.Do(context.Background(), args...).Err()
	if assert.Errorf(t, err, "%v", args) {
		assert.Equalf(t, want, err.Error(), "%v", args)
	}
}
