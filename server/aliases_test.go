package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGCRAAndThrottleShareCLThrottleState: GCRA (Redis's shelved reply) and
// THROTTLE (throttlecrab's) decide on CL.THROTTLE's state, each with its
// own reply shape.
func TestGCRAAndThrottleShareCLThrottleState(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		ctx := context.Background()
		ints := func(args ...any) []int64 {
			t.Helper()
			v, err := c.Do(ctx, args...).Int64Slice()
			require.NoErrorf(t, err, "%v", args)
			return v
		}
		// 5 at once (max_burst 4), one more every 2 s.
		assert.Equal(t, []int64{0, 5, 4, -1, 2}, ints("GCRA", "g", 4, 1, 2))
		assert.Equal(t, []int64{0, 5, 3, -1, 4}, ints("CL.THROTTLE", "g", 4, 1, 2), "the same state")
		assert.Equal(t, []int64{0, 5, 0, -1, 10}, ints("GCRA", "g", 4, 1, 2, "TOKENS", 3))
		assert.Equal(t, []int64{1, 5, 0, 2, 10}, ints("GCRA", "g", 4, 1, 2), "limited: retry after 2 s")
		assert.Equal(t, []int64{1, 5, 0, -1, 10}, ints("GCRA", "g", 4, 1, 2, "TOKENS", 6), "more than a burst never fits")
		assert.Equal(t, []int64{1, 5, 0, 2, 10}, ints("CL.THROTTLE", "g", 4, 1, 2))
		clk.Set(2 * time.Second)
		assert.Equal(t, []int64{0, 5, 0, -1, 10}, ints("GCRA", "g", 4, 1, "2.0"), "a period with a fraction")
		wantReply(t, c, "token", "TYPE", "g")

		// THROTTLE: a bucket of max_burst, allowed first, reset before retry.
		assert.Equal(t, []int64{1, 5, 4, 2, 0}, ints("THROTTLE", "t", 5, 1, 2))
		assert.Equal(t, []int64{1, 5, 0, 10, 0}, ints("THROTTLE", "t", 5, 1, 2, 4))
		assert.Equal(t, []int64{0, 5, 0, 10, 2}, ints("THROTTLE", "t", 5, 1, 2))
		assert.Equal(t, []int64{0, 5, 0, 10, 2}, ints("THROTTLE", "t", 5, 1, 2, 0), "quantity 0 peeks")
		assert.Equal(t, [5]int64{0, 5, 0, 2000, 10000}, wantDecision(t, c, "RL.TOKEN", "t", 5, 1, "2s", "PEEK"), "RL.TOKEN reads the same bucket")
	})
}

func TestGCRAErrors(t *testing.T) {
	_, c := startWithClock(t, 2)
	for _, tc := range []struct {
		want string
		args []any
	}{
		{"ERR value is out of range, must be positive", []any{"GCRA", "k", -1, 1, 1}},
		{"ERR value is out of range, value must between 1 and 9223372036854775807", []any{"GCRA", "k", 1, 0, 1}},
		{"ERR value is not a valid float", []any{"GCRA", "k", 1, 1, "x"}},
		{"ERR period must be > 0 and < 1e12", []any{"GCRA", "k", 1, 1, 0}},
		{"ERR syntax error", []any{"GCRA", "k", 1, 1, 1, "COST"}},
		{"ERR Missing TOKENS value", []any{"GCRA", "k", 1, 1, 1, "TOKENS"}},
		{"ERR wrong number of arguments for 'gcra' command", []any{"GCRA", "k", 1, 1, 1, "TOKENS", 1, 2}},
		{"ERR invalid max_burst, count_per_period or period", []any{"THROTTLE", "k", 0, 1, 1}},
		{"ERR value is not an integer or out of range", []any{"THROTTLE", "k", 1, "x", 1}},
	} {
		wantErrReply(t, c, tc.want, tc.args...)
	}
	wantAcquire(t, c, "lease", 1, "1m")
	wantErrReply(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "GCRA", "lease", 1, 1, 1)
}

// TestAliasAllocs: GCRA and THROTTLE allocate nothing on the server's path.
func TestAliasAllocs(t *testing.T) {
	s := newTestServer(t, Config{})
	rc := newBenchConn()
	c := benchClient(s, rc)
	batch := []byte(respCmd("GCRA", "g", "1000000", "1000000", "1.5", "TOKENS", "2") + respCmd("THROTTLE", "t", "1000000", "1000000", "60"))
	runBatch(s, c, rc, batch)
	assert.Zero(t, quietAllocsPerRun(200, func() { runBatch(s, c, rc, batch) }))
}
