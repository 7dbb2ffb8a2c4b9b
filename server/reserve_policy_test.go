package server

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReservePolicy: RL.RESERVE key POLICY name charges an estimate to
// every rule of the policy, all or nothing, and replies from the binding
// rule; RL.COMMIT and RL.CANCEL with POLICY name settle it on every rule,
// idempotent by id; the plain ledger of the key is another one.
func TestReservePolicy(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		require.Equal(t, "OK", c.Do(ctxT(t), "RL.POLICY", "SET", "llm", "TOKEN", 1000, 1000, "1m", "FIXED", 1050, "1h").Val())
		check := func() (remaining, rule int64) {
			v, err := c.Do(ctxT(t), "RL.CHECK", "llm", "acme", "PEEK").Int64Slice()
			require.NoError(t, err)
			return v[2], v[5]
		}
		rep := wantReserve(t, c, "acme", "POLICY", "llm", "COST", 600, "TTL", "30s", "ID", "r1")
		assert.Equal(t, []any{int64(1), "r1", int64(1000), int64(400), int64(0), int64(36000)}, rep, "the token rule binds")
		assert.Equal(t, int64(1), wantReserve(t, c, "acme", "POLICY", "llm", "COST", 600, "TTL", "30s", "ID", "r1")[0], "a retry")
		left, _ := check()
		assert.Equal(t, int64(399), left, "charged once")
		rep = wantReserve(t, c, "acme", "POLICY", "llm", "COST", 600, "TTL", "30s", "ID", "r2")
		assert.Equal(t, int64(0), rep[0], "the token rule denies: nothing charged to either rule")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.COMMIT", "acme", "r1", "ACTUAL", 100), "the key's plain ledger has no r1")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "acme", "r1", "ACTUAL", 100, "POLICY", "llm"))
		assert.Equal(t, int64(0), wantInt(t, c, "RL.COMMIT", "acme", "r1", "ACTUAL", 100, "POLICY", "llm"), "a second commit")
		left, _ = check()
		assert.Equal(t, int64(899), left, "100 charged to the token rule")
		clk.Set(time.Minute) // the bucket refills; the hour's window does not
		left, rule := check()
		assert.Equal(t, [2]int64{949, 1}, [2]int64{left, rule}, "and 100 to the fixed rule, which now binds")

		gen := wantReserve(t, c, "acme", "POLICY", "llm", "COST", 50, "TTL", "30s")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.CANCEL", "acme", gen[1], "POLICY", "llm"))
		assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "acme", gen[1], "POLICY", "llm"))
		left, _ = check()
		assert.Equal(t, int64(949), left, "the cancel gave 50 back to both")
	})
}

// TestReservePolicyErrors: every error of the POLICY forms.
func TestReservePolicyErrors(t *testing.T) {
	_, c := startWithClock(t, 3)
	require.Equal(t, "OK", c.Do(ctxT(t), "RL.POLICY", "SET", "logs", "SLIDE", 10, 60, "LOG", 10, 60).Val())
	require.Equal(t, "OK", c.Do(ctxT(t), "RL.POLICY", "SET", "try", "SLIDE", 10, 60, "SHADOW").Val())
	require.Equal(t, "OK", c.Do(ctxT(t), "RL.POLICY", "SET", "ok", "SLIDE", 10, 60).Val())
	for _, tc := range []struct {
		want string
		args []any
	}{
		{"ERR no such policy 'nope'", []any{"RL.RESERVE", "k", "POLICY", "nope", "TTL", "1s"}},
		{string(decide.ErrReservePolicy), []any{"RL.RESERVE", "k", "POLICY", "logs", "TTL", "1s"}},
		{string(decide.ErrReservePolicy), []any{"RL.RESERVE", "k", "POLICY", "try", "TTL", "1s"}},
		{"ERR RL.RESERVE needs TTL ttl", []any{"RL.RESERVE", "k", "POLICY", "ok", "COST", 1}},
		{"ERR cost must be between 1 and 2199023255551", []any{"RL.RESERVE", "k", "POLICY", "ok", "COST", 0, "TTL", "1s"}},
		{"ERR syntax error", []any{"RL.RESERVE", "k", "POLICY", "ok", "TTL"}},
		{"ERR syntax error", []any{"RL.COMMIT", "k", "r", "ACTUAL", 1, "POLICY"}},
		{"ERR syntax error", []any{"RL.COMMIT", "k", "r", "ACTUAL", 1, "RULES", "ok"}},
		{"ERR actual must be at least 0", []any{"RL.COMMIT", "k", "r", "ACTUAL", -1, "POLICY", "ok"}},
		{"ERR no such policy 'nope'", []any{"RL.CANCEL", "k", "r", "POLICY", "nope"}},
		{"ERR syntax error", []any{"RL.CANCEL", "k", "r", "x"}},
		{"ERR keys starting with \\xffp are reserved for policy state", []any{"RL.RESERVE", "\xffpk", "POLICY", "ok", "TTL", "1s"}},
	} {
		wantErrReply(t, c, tc.want, tc.args...)
	}
}

// TestReserveLargeEstimates: an upload's bytes, above 2^20, reserve and
// commit exactly, up to 2^41-1; beyond it the cost error says the range.
func TestReserveLargeEstimates(t *testing.T) {
	_, c := startWithClock(t, 3)
	rep := wantReserve(t, c, "up:acme", "FIXED", 10_000_000_000, "1d", "COST", 6_000_000_000, "TTL", "1h", "ID", "u1")
	assert.Equal(t, []any{int64(1), "u1", int64(10_000_000_000), int64(4_000_000_000), int64(0)}, rep[:5])
	assert.Equal(t, int64(0), wantReserve(t, c, "up:acme", "FIXED", 10_000_000_000, "1d", "COST", 5_000_000_000, "TTL", "1h")[0])
	assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "up:acme", "u1", "ACTUAL", 1_500_000_123))
	assert.Equal(t, int64(8_499_999_877), wantDecision(t, c, "RL.FIXED", "up:acme", 10_000_000_000, "1d", "PEEK")[2]+1)
	assert.Equal(t, int64(0), wantReserve(t, c, "up:acme", "FIXED", 10_000_000_000, "1d", "COST", 2199023255551, "TTL", "1h")[0], "the largest estimate is a valid request")
	wantErrReply(t, c, "ERR cost must be between 1 and 2199023255551", "RL.RESERVE", "up:acme", "FIXED", 10_000_000_000, "1d", "COST", 2199023255552, "TTL", "1h")
}
