package server

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseExpiryCounters: leases and reservations whose TTL ran out count
// once each in INFO stats (rl_leases_expired, rl_reservations_expired) and
// /metrics (rlstore_leases_expired_total,
// rlstore_reservations_expired_total), whether the key's next command or
// the background sweep drops them, and whether an expired reservation
// commits or is given back; releases, commits and cancels never count.
func TestLeaseExpiryCounters(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		t.Run(map[bool]string{true: "cancel", false: "commit"}[cancel], func(t *testing.T) {
			clk := newStepClock()
			store, err := shard.New(shard.Config{CancelExpired: cancel, Charged: policy.AppendCharged})
			require.NoError(t, err)
			s, addr := startServer(t, Config{Clock: clk.Now, Store: store, SweepInterval: 10 * time.Millisecond})
			c := newClient(t, addr, 3)
			ctx := ctxT(t)
			for _, id := range []string{"a", "b", "c"} {
				require.NoError(t, c.Do(ctx, "RL.ACQUIRE", "jobs", 5, "1s", "ID", id).Err())
			}
			require.NoError(t, c.Do(ctx, "RL.ACQUIRE", "jobs", 5, "1m", "ID", "d").Err())
			require.NoError(t, c.Do(ctx, "RL.ACQUIRE", "idle", 5, "1s", "ID", "a").Err())
			assert.Equal(t, int64(1), wantInt(t, c, "RL.RELEASE", "jobs", "a"))
			wantReserve(t, c, "up", "FIXED", 100, "1h", "COST", 10, "TTL", "1s", "ID", "r1")
			wantReserve(t, c, "up", "FIXED", 100, "1h", "COST", 10, "TTL", "1s", "ID", "r2")
			wantReserve(t, c, "up", "FIXED", 100, "1h", "COST", 10, "TTL", "1m", "ID", "r3")
			assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "up", "r2", "ACTUAL", 5))
			counts := func() (leases, reservations string) {
				info, err := c.Info(ctx, "stats").Result()
				require.NoError(t, err)
				return infoField(info, "rl_leases_expired"), infoField(info, "rl_reservations_expired")
			}
			l, r := counts()
			assert.Equal(t, "0", l, "a release is no expiry")
			assert.Equal(t, "0", r, "a commit is no expiry")

			clk.Set(30 * time.Second) // past the sweep's grace, before d and r3 end
			assert.Equal(t, int64(0), wantInt(t, c, "RL.RELEASE", "jobs", "b"), "b ran out")
			assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "up", "r1"), "r1 ran out")
			eventually(t, "the sweep frees idle", func() bool { l, _ := counts(); return l == "3" })
			l, r = counts()
			assert.Equal(t, "3", l, "b and c, then idle's a")
			assert.Equal(t, "1", r, "r1")
			m := scrape(s)
			assert.Equal(t, "3", metricValue(m, "rlstore_leases_expired_total"))
			assert.Equal(t, "1", metricValue(m, "rlstore_reservations_expired_total"))
		})
	}
}
