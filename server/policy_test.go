package server

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/persistence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func check6(t *testing.T, c *redis.Client, args ...any) [6]int64 {
	t.Helper()
	v, err := c.Do(ctxT(t), append([]any{"RL.CHECK"}, args...)...).Int64Slice()
	require.NoError(t, err, args)
	require.Len(t, v, 6, args)
	return [6]int64(v)
}

func TestPolicyAllOrNothing(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		ctx := ctxT(t)
		require.Equal(t, "OK", c.Do(ctx, "RL.POLICY", "SET", "api", "SLIDE", 10, "1m", "SLIDE", 2, 3).Val())
		// Admitted: the binding rule has the least remaining (rule 1).
		assert.Equal(t, [6]int64{1, 2, 1, 0, 3000, 1}, check6(t, c, "api", "u"))
		assert.Equal(t, [6]int64{1, 2, 0, 0, 3000, 1}, check6(t, c, "api", "u"))
		// Denied by rule 1 alone: nothing is charged, so rule 0 still has 8.
		assert.Equal(t, [6]int64{0, 2, 0, 3000, 3000, 1}, check6(t, c, "api", "u"))
		assert.Equal(t, [6]int64{0, 2, 0, 3000, 3000, 1}, check6(t, c, "api", "u", "PEEK"))
		clk.Set(3 * time.Second)
		assert.Equal(t, [6]int64{1, 2, 1, 0, 3000, 1}, check6(t, c, "api", "u", "PEEK"), "rule 0 would have 10 - 2 - 1")
		// A cost only rule 0 could take: rule 1 denies, never.
		assert.Equal(t, [6]int64{0, 2, 2, -1, 0, 1}, check6(t, c, "api", "u", "COST", 3))
		// Policy state is independent of native state on the same key, and hidden.
		native := wantDecision(t, c, "RL.FIXED", "u", 1, 60)
		assert.Equal(t, []int64{1, 1, 0, 0}, native[:4])
		assert.Equal(t, [6]int64{1, 2, 1, 0, 3000, 1}, check6(t, c, "api", "u"))
		keys, err := c.Keys(ctx, "*").Result()
		require.NoError(t, err)
		assert.Equal(t, []string{"u"}, keys)
		assert.Equal(t, "none", c.Type(ctx, "\xffp\x03api\x00u").Val())
		assert.EqualValues(t, 0, c.Del(ctx, "\xffp\x03api\x00u").Val())
	})
}

func TestPolicyBindingDeniedLongestWait(t *testing.T) {
	clk, c := startWithClock(t, 3)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "two", "FIXED", 1, "10s", "TOKEN", 1, 1, "1s", "LEAKY", 5, 1, "1s").Err())
	assert.Equal(t, [6]int64{1, 1, 0, 0, 10000, 0}, check6(t, c, "two", "k"))
	// Both of the first rules deny; the fixed window waits longer.
	assert.Equal(t, [6]int64{0, 1, 0, 10000, 10000, 0}, check6(t, c, "two", "k"))
	clk.Set(10 * time.Second)
	// Admitted: the leaky rule's delay is the reply's.
	v := check6(t, c, "two", "k")
	assert.EqualValues(t, 1, v[0])
	clk.Set(10 * time.Second)
	assert.EqualValues(t, 0, check6(t, c, "two", "k")[0])
}

func TestPolicyPenalty(t *testing.T) {
	clk, c := startWithClock(t, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "login", "TOKEN", 2, 1, "1s", "PENALTY", "30s").Err())
	assert.EqualValues(t, 1, check6(t, c, "login", "ip")[0])
	assert.EqualValues(t, 1, check6(t, c, "login", "ip")[0])
	assert.Equal(t, [6]int64{0, 2, 0, 30000, 2000, 0}, check6(t, c, "login", "ip"), "the denial starts the penalty")
	clk.Set(10 * time.Second) // the bucket has refilled, but the penalty holds
	assert.Equal(t, [6]int64{0, 2, 1, 20000, 1000, 0}, check6(t, c, "login", "ip", "COST", 1))
	clk.Set(29*time.Second + 999*time.Millisecond)
	assert.EqualValues(t, 1, check6(t, c, "login", "ip")[3], "wait_ms counts down")
	clk.Set(30 * time.Second)
	assert.Equal(t, [6]int64{1, 2, 1, 0, 1000, 0}, check6(t, c, "login", "ip"))
	assert.EqualValues(t, 1, check6(t, c, "login", "other")[0], "another key is not penalised")
}

func TestPolicyShadow(t *testing.T) {
	_, c := startWithClock(t, 3)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "try", "FIXED", 1, 60, "SHADOW").Err())
	assert.Equal(t, [6]int64{1, 1, 0, 0, 60000, 0}, check6(t, c, "try", "k"))
	assert.Equal(t, [6]int64{1, 1, 0, 0, 60000, 0}, check6(t, c, "try", "k"), "would be denied: admitted, counted")
	assert.Equal(t, [6]int64{1, 1, 0, 0, 60000, 0}, check6(t, c, "try", "k"))
	info := c.Info(ctx, "stats").Val()
	assert.Contains(t, info, "rl_shadow_denied:2\r\n")
}

func TestPolicyRedefine(t *testing.T) {
	_, c := startWithClock(t, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "p", "FIXED", 2, 60, "LOG", 2, 60).Err())
	check6(t, c, "p", "k")
	check6(t, c, "p", "k")
	assert.EqualValues(t, 0, check6(t, c, "p", "k")[0])
	// Raising rule 0 applies to its state; rule 1 changes algorithm and starts fresh.
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "p", "FIXED", 3, 60, "TOKEN", 5, 1, 60).Err())
	assert.Equal(t, [6]int64{1, 3, 0, 0, 60000, 0}, check6(t, c, "p", "k"))
	assert.Equal(t, []any{"FIXED", "3", "60", "TOKEN", "5", "1", "60"}, c.Do(ctx, "RL.POLICY", "GET", "p").Val())
}

func TestPolicyCommands(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "b", "slide", 10, 60, "penalty", "5s", "shadow").Err())
		require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "a", "LEAKY", 10, 1, "1s").Err())
		assert.Equal(t, []any{"SLIDE", "10", "60", "PENALTY", "5s", "SHADOW"}, c.Do(ctx, "RL.POLICY", "GET", "b").Val())
		assert.Equal(t, []any{"a", "b"}, c.Do(ctx, "RL.POLICY", "LIST").Val())
		assert.Equal(t, redis.Nil, c.Do(ctx, "RL.POLICY", "GET", "nope").Err())
		assert.EqualValues(t, 1, c.Do(ctx, "RL.POLICY", "DEL", "b").Val())
		assert.EqualValues(t, 0, c.Do(ctx, "RL.POLICY", "DEL", "b").Val())
		assert.Equal(t, []any{"a"}, c.Do(ctx, "RL.POLICY", "LIST").Val())
		help, err := c.Do(ctx, "RL.POLICY", "HELP").Slice()
		require.NoError(t, err)
		assert.Len(t, help, 5)
	})
}

func TestPolicyErrors(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"RL.CHECK", "nope", "k"}, "ERR no such policy 'nope'"},
		{[]any{"RL.CHECK", "nope"}, "ERR wrong number of arguments for 'rl.check' command"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED"}, "ERR wrong number of arguments for 'rl.policy|set' command"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", 1}, "ERR wrong number of arguments for a policy rule"},
		{[]any{"RL.POLICY", "SET", "p", "TOKEN", 1, 1}, "ERR wrong number of arguments for a policy rule"},
		{[]any{"RL.POLICY", "SET", "p", "BOGUS", 1, 1}, "ERR syntax error"},
		{[]any{"RL.POLICY", "SET", "p", "SHADOW", "PENALTY", "1s"}, "ERR a policy needs at least one rule: SLIDE limit window | TOKEN capacity rate period | FIXED limit window | LOG limit window | LEAKY capacity rate period"},
		{[]any{"RL.POLICY", "SET", "", "FIXED", 1, 1}, "ERR policy name must not be empty"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", 1, 1, "PENALTY"}, "ERR syntax error"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", 1, 1, "PENALTY", "0"}, "ERR penalty must be a duration between 1ms and 3650d"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", 1, 1, "PENALTY", "x"}, "ERR penalty must be a duration between 1ms and 3650d"},
		{[]any{"RL.POLICY", "SET", "p", "SLIDE", 0, 60}, "ERR limit must be between 1 and 4294967295"},
		{[]any{"RL.POLICY", "SET", "p", "SLIDE", 1, "1500ms"}, "ERR window must be a whole number of seconds"},
		{[]any{"RL.POLICY", "SET", "p", "LOG", 4001, 60}, "ERR limit must be between 1 and 4000"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", 0, 60}, "ERR limit must be at least 1"},
		{[]any{"RL.POLICY", "SET", "p", "TOKEN", 1, 0, 60}, "ERR rate must be at least 1"},
		{[]any{"RL.POLICY", "SET", "p", "LEAKY", 0, 1, 60}, "ERR capacity must be at least 1"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", "x", 60}, "ERR value is not an integer or out of range"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", 1, "1x"}, "ERR window is not a duration or out of range"},
		{[]any{"RL.POLICY", "SET", "p", "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60,
			"FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60,
			"FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60,
			"FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60,
			"FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60, "FIXED", 1, 60}, "ERR a policy has at most 32 rules"},
		{[]any{"RL.POLICY", "GET"}, "ERR wrong number of arguments for 'rl.policy|get' command"},
		{[]any{"RL.POLICY", "NOPE"}, "ERR unknown subcommand 'NOPE'. Try RL.POLICY HELP."},
	}
	for _, tc := range cases {
		wantErrReply(t, c, tc.want, tc.args...)
	}
	require.NoError(t, c.Do(ctxT(t), "RL.POLICY", "SET", "p", "FIXED", 1, 60).Err())
	wantErrReply(t, c, "ERR cost must be at least 1", "RL.CHECK", "p", "k", "COST", 0)
	wantErrReply(t, c, "ERR syntax error", "RL.CHECK", "p", "k", "BOGUS")
	wantErrReply(t, c, "ERR keys starting with \\xffp are reserved for policy state", "RL.CHECK", "p", "\xffpk")
	assert.Equal(t, []any{"p"}, c.Do(ctxT(t), "RL.POLICY", "LIST").Val(), "no failed SET defined anything")
}

// TestPolicyDurable saves policies in a store, then loads them into a new server.
func TestPolicyDurable(t *testing.T) {
	dir := t.TempDir()
	st, _, err := persistence.OpenPolicies(dir)
	require.NoError(t, err)
	_, addr := startServer(t, Config{Policies: st})
	c := newClient(t, addr, 2)
	require.NoError(t, c.Do(ctxT(t), "RL.POLICY", "SET", "keep", "TOKEN", 5, 1, "1s", "FIXED", 10, "1m", "PENALTY", "1h").Err())
	require.NoError(t, c.Do(ctxT(t), "RL.POLICY", "SET", "gone", "LOG", 5, "1s").Err())
	assert.EqualValues(t, 1, c.Do(ctxT(t), "RL.POLICY", "DEL", "gone").Val())
	require.NoError(t, st.Close())

	st2, _, err := persistence.OpenPolicies(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st2.Close() })
	_, addr2 := startServer(t, Config{Policies: st2})
	c2 := newClient(t, addr2, 3)
	assert.Equal(t, []any{"keep"}, c2.Do(ctxT(t), "RL.POLICY", "LIST").Val())
	assert.Equal(t, "TOKEN 5 1 1s FIXED 10 1m PENALTY 1h", strings.Join(toStrings(c2.Do(ctxT(t), "RL.POLICY", "GET", "keep").Val()), " "))
	assert.EqualValues(t, 1, check6(t, c2, "keep", "k")[0])
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}
