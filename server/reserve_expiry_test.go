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
			store, err := shard.New(shard.Config{CancelExpired: cancel, Charged: policy.AppendCharged})
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

// TestReserveExpiryCancelPolicy: --reserve-expiry cancel holds for
// reservations against a policy too: the background sweep gives an
// expired estimate back to every rule, once; under commit it stays
// charged to every rule.
func TestReserveExpiryCancelPolicy(t *testing.T) {
	for _, cancel := range []bool{true, false} {
		t.Run(map[bool]string{true: "cancel", false: "commit"}[cancel], func(t *testing.T) {
			clk := newStepClock()
			store, err := shard.New(shard.Config{CancelExpired: cancel, Charged: policy.AppendCharged})
			require.NoError(t, err)
			_, addr := startServer(t, Config{Clock: clk.Now, Store: store, SweepInterval: 10 * time.Millisecond})
			c := newClient(t, addr, 3)
			// The day's rule binds only while both rules hold the same units.
			require.Equal(t, "OK", c.Do(ctxT(t), "RL.POLICY", "SET", "llm", "FIXED", 1000, "1h", "FIXED", 800, "1d").Val())
			left := func() [2]int64 { // the binding rule's units left, and its index
				v, err := c.Do(ctxT(t), "RL.CHECK", "llm", "acme", "PEEK").Int64Slice()
				require.NoError(t, err)
				return [2]int64{v[2] + 1, v[5]}
			}
			wantReserve(t, c, "acme", "POLICY", "llm", "COST", 600, "TTL", "1s", "ID", "r1")
			wantReserve(t, c, "acme", "POLICY", "llm", "COST", 100, "TTL", "1m", "ID", "r2")
			require.Equal(t, [2]int64{100, 1}, left())
			clk.Set(2 * time.Second)
			if !cancel {
				assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "acme", "r1", "POLICY", "llm"), "expired: not outstanding")
				assert.Equal(t, [2]int64{100, 1}, left(), "commit: the estimate stays charged")
				return
			}
			// Given back to the hour's rule only, 300 of it would bind; to the day's only, 100.
			eventually(t, "the sweep gives r1's estimate back to both rules", func() bool { return left() == [2]int64{700, 1} })
			assert.Equal(t, int64(0), wantInt(t, c, "RL.CANCEL", "acme", "r1", "POLICY", "llm"), "expired: not outstanding")
			assert.Equal(t, int64(1), wantInt(t, c, "RL.COMMIT", "acme", "r2", "ACTUAL", 50, "POLICY", "llm"))
			assert.Equal(t, [2]int64{750, 1}, left(), "r1 given back once, r2 committed at 50")
		})
	}
}
