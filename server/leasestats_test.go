package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseCounters: RL.ACQUIRE and RL.RESERVE (a key's and a policy's)
// count as decisions, allowed or denied; RL.RENEW, RL.RELEASE, RL.COMMIT
// and RL.CANCEL as settlements that found theirs live or ended, in
// /metrics and INFO stats; refunds and errors count in neither.
func TestLeaseCounters(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	for _, id := range []string{"a", "b", "c"} { // the third is denied
		require.NoError(t, c.Do(ctx, "RL.ACQUIRE", "jobs", 2, "30s", "ID", id).Err())
	}
	assert.Equal(t, int64(1), wantInt(t, c, "RL.RENEW", "jobs", "a", "30s"))
	assert.Equal(t, int64(1), wantInt(t, c, "RL.RELEASE", "jobs", "a"))
	assert.Equal(t, int64(0), wantInt(t, c, "RL.RELEASE", "jobs", "a"))
	assert.Equal(t, int64(0), wantInt(t, c, "RL.RENEW", "jobs", "a", "30s"))

	require.Equal(t, "OK", c.Do(ctx, "RL.POLICY", "SET", "llm", "FIXED", 100, "1h").Val())
	wantReserve(t, c, "up", "FIXED", 100, "1h", "COST", 60, "TTL", "1m", "ID", "r1")
	wantReserve(t, c, "up", "FIXED", 100, "1h", "COST", 60, "TTL", "1m", "ID", "r2") // denied
	wantReserve(t, c, "up", "POLICY", "llm", "COST", 10, "TTL", "1m", "ID", "p1")
	assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "up", "r1", "ACTUAL", 50))
	assert.Equal(t, int64(0), wantInt(t, c, "RL.COMMIT", "up", "r1", "ACTUAL", 50))
	assert.Equal(t, int64(1), wantInt(t, c, "RL.CANCEL", "up", "p1", "POLICY", "llm"))
	assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "up", "p1", "POLICY", "llm"))
	assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "up", "nope"))
	assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "up", "COST", 5))
	require.Error(t, c.Do(ctx, "RL.ACQUIRE", "jobs", 0, "30s").Err())
	require.Error(t, c.Do(ctx, "RL.COMMIT", "up", "r1", "ACTUAL", -1).Err())

	m := scrape(s)
	for name, want := range map[string]string{
		`rlstore_decisions_total{command="rl.acquire",result="allowed"}`: "2",
		`rlstore_decisions_total{command="rl.acquire",result="denied"}`:  "1",
		`rlstore_decisions_total{command="rl.reserve",result="allowed"}`: "2",
		`rlstore_decisions_total{command="rl.reserve",result="denied"}`:  "1",
		`rlstore_settlements_total{command="rl.renew",result="live"}`:    "1",
		`rlstore_settlements_total{command="rl.renew",result="ended"}`:   "1",
		`rlstore_settlements_total{command="rl.release",result="live"}`:  "1",
		`rlstore_settlements_total{command="rl.release",result="ended"}`: "1",
		`rlstore_settlements_total{command="rl.commit",result="live"}`:   "1",
		`rlstore_settlements_total{command="rl.commit",result="ended"}`:  "1",
		`rlstore_settlements_total{command="rl.cancel",result="live"}`:   "1",
		`rlstore_settlements_total{command="rl.cancel",result="ended"}`:  "2",
	} {
		assert.Equal(t, want, metricValue(m, name), name)
	}
	info, err := c.Info(ctx, "stats").Result()
	require.NoError(t, err)
	for field, want := range map[string]string{
		"rl_leases_allowed": "2", "rl_leases_denied": "1", "rl_leases_ended": "2",
		"rl_reservations_allowed": "2", "rl_reservations_denied": "1", "rl_reservations_ended": "3",
	} {
		assert.Equal(t, want, infoField(info, field), field)
	}
}
