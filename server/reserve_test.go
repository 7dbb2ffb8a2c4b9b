package server

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func wantReserve(t *testing.T, c *redis.Client, args ...any) []any {
	t.Helper()
	v, err := c.Do(context.Background(), append([]any{"RL.RESERVE"}, args...)...).Slice()
	require.NoErrorf(t, err, "%v", args)
	require.Lenf(t, v, 6, "%v", args)
	return v
}

func TestReserveCommands(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		rule := []any{"llm:acme", "TOKEN", 1000, 1000, "1m"}
		res := func(extra ...any) []any { return wantReserve(t, c, append(append([]any{}, rule...), extra...)...) }
		assert.Equal(t, []any{int64(1), "r1", int64(1000), int64(400), int64(0), int64(36000)}, res("COST", 600, "TTL", "30s", "ID", "r1"))
		assert.Equal(t, int64(1), res("COST", 600, "TTL", "30s", "ID", "r1")[0], "a retried reserve")
		assert.Equal(t, []any{int64(0), "r2", int64(1000), int64(400), int64(12000), int64(36000)}, res("COST", 600, "TTL", "30s", "ID", "r2"),
			"the outstanding estimate counts")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "llm:acme", "r1", "ACTUAL", 200))
		assert.Equal(t, int64(0), wantInt(t, c, "RL.COMMIT", "llm:acme", "r1", "ACTUAL", 200), "a second commit")
		assert.Equal(t, int64(800), wantDecision(t, c, "RL.TOKEN", "llm:acme", 1000, 1000, "1m", "PEEK")[2]+1)
		gen := res("COST", 100, "TTL", "30s")
		assert.Len(t, gen[1], 24)
		assert.Equal(t, int64(1), wantInt(t, c, "RL.CANCEL", "llm:acme", gen[1]))
		assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "llm:acme", gen[1]))
		res("COST", 100, "TTL", "30s", "ID", "big")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "llm:acme", "big", "ACTUAL", 5000))
		assert.Equal(t, int64(0), wantDecision(t, c, "RL.TOKEN", "llm:acme", 1000, 1000, "1m", "PEEK")[0], "over the limit after the excess")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "llm:acme", "COST", 100000))
		assert.Equal(t, [5]int64{1, 1000, 999, 0, 60}, wantDecision(t, c, "RL.TOKEN", "llm:acme", 1000, 1000, "1m", "PEEK"), "full again, no more")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.REFUND", "llm:acme", "COST", 1), "nothing to give back")

		res("COST", 10, "TTL", "1s", "ID", "late")
		assert.Equal(t, []string{"llm:acme"}, scanAll(t, c, "match", "*"), "the ledger is no key a client sees")
		clk.Set(2 * time.Second)
		assert.Equal(t, int64(0), wantInt(t, c, "RL.COMMIT", "llm:acme", "late", "ACTUAL", 1), "an expired reservation kept its estimate")
	})
}

func TestReserveErrors(t *testing.T) {
	_, c := startWithClock(t, 3)
	for _, tc := range []struct {
		want string
		args []any
	}{
		{"ERR the rule must be SLIDE, FIXED or TOKEN", []any{"RL.RESERVE", "k", "LOG", 5, "1s", "TTL", "1s"}},
		{"ERR wrong number of arguments for 'rl.reserve' command", []any{"RL.RESERVE", "k", "TOKEN", 5, 1}},
		{"ERR RL.RESERVE needs TTL ttl", []any{"RL.RESERVE", "k", "FIXED", 5, "1m", "COST", 2}},
		{"ERR cost must be between 1 and 2199023255551", []any{"RL.RESERVE", "k", "FIXED", 5, "1m", "COST", 0, "TTL", "1s"}},
		{"ERR syntax error", []any{"RL.RESERVE", "k", "FIXED", 5, "1m", "TTL"}},
		{"ERR ttl must be between 1ms and 1d", []any{"RL.RESERVE", "k", "FIXED", 5, "1m", "TTL", "3d"}},
		{"ERR syntax error", []any{"RL.COMMIT", "k", "r", "COST", 1}},
		{"ERR actual must be at least 0", []any{"RL.COMMIT", "k", "r", "ACTUAL", -1}},
		{"ERR value is not an integer or out of range", []any{"RL.COMMIT", "k", "r", "ACTUAL", "x"}},
		{"ERR cost must be at least 1", []any{"RL.REFUND", "k", "COST", 0}},
		{"ERR syntax error", []any{"RL.REFUND", "k", "UNITS", 1}},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", []any{"RL.RESERVE", "lease", "FIXED", 5, "1m", "TTL", "1s"}},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", []any{"RL.REFUND", "lease", "COST", 1}},
		{"ERR keys starting with \\xffp are reserved for policy state", []any{"RL.CANCEL", "\xffpk", "r"}},
	} {
		if tc.args[1] == "lease" {
			wantAcquire(t, c, "lease", 5, "1m")
		}
		wantErrReply(t, c, tc.want, tc.args...)
	}
}

// TestReserveAllocs: a reserve and its commit, and a refund, allocate
// nothing on the server's whole path.
func TestReserveAllocs(t *testing.T) {
	s := newTestServer(t, Config{})
	rc := newBenchConn()
	c := benchClient(s, rc)
	batch := []byte(respCmd("RL.RESERVE", "b", "SLIDE", "1000000", "60", "COST", "10", "TTL", "1m", "ID", "r") +
		respCmd("RL.COMMIT", "b", "r", "ACTUAL", "7") + respCmd("RL.RESERVE", "b", "SLIDE", "1000000", "60", "COST", "10", "TTL", "1m") +
		respCmd("RL.REFUND", "b", "COST", "1") + respCmd("RL.REFUND", "b", "SLIDE", "1000000", "60", "COST", "1") +
		respCmd("RL.RESERVE", "b", "POLICY", "p", "COST", "10", "TTL", "1m", "ID", "q") + respCmd("RL.COMMIT", "b", "q", "ACTUAL", "7", "POLICY", "p"))
	runBatch(s, c, rc, []byte(respCmd("RL.POLICY", "SET", "p", "SLIDE", "1000000", "60", "TOKEN", "1000000", "1000000", "60")))
	runBatch(s, c, rc, batch)
	assert.Zero(t, quietAllocsPerRun(200, func() { runBatch(s, c, rc, batch) }))
}
