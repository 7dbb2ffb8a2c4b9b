package server

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReserveExpiryCancel: on a store made as --reserve-expiry cancel
// makes it, an expired reservation's estimate comes back by itself (the
// background sweep), once, and a commit or cancel after its expiry
// replies 0; on the default store it stays charged.
func TestReserveExpiryCancel(t *testing.T) {
	for _, cancel := range []bool{true, false} {
		t.Run(map[bool]string{true: "cancel", false: "commit"}[cancel], func(t *testing.T) {
			clk := newStepClock()
			store, err := shard.New(shard.Config{CancelExpired: cancel, Route: policy.Route})
			require.NoError(t, err)
			_, addr := startServer(t, Config{Clock: clk.Now, Store: store, SweepInterval: 10 * time.Millisecond})
			c := newClient(t, addr, 3)
			left := func() int64 { return wantDecision(t, c, "RL.FIXED", "up:acme", 1000, "1h", "PEEK")[2] + 1 }
			wantReserve(t, c, "up:acme", "FIXED", 1000, "1h", "COST", 600, "TTL", "1s", "ID", "r1")
			wantReserve(t, c, "up:acme", "FIXED", 1000, "1h", "COST", 100, "TTL", "1m", "ID", "r2")
			require.EqualValues(t, 300, left())
			clk.Set(2 * time.Second)
			if !cancel {
				assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "up:acme", "r1"), "expired: not outstanding")
				assert.EqualValues(t, 300, left(), "commit: the estimate stays charged")
				return
			}
			eventually(t, "the sweep gives r1's estimate back", func() bool { return left() == 900 })
			assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "up:acme", "r1"), "expired: not outstanding")
			assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "up:acme", "r2", "ACTUAL", 50))
			assert.EqualValues(t, 950, left(), "r1 given back once, r2 committed at 50")
		})
	}
}
