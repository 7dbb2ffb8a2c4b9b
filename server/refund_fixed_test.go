package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRefundFixedKeepsWindow: a fixed window refunded to 0 keeps its key,
// counting 0, until the window ends, as Redis's INCR+PEXPIRE counter given
// back with DECRBY keeps its key and TTL (rate-limiter-flexible's reward
// reads it back as '0'); with ANCHOR FIRST the next hit counts in that
// window, so its reset is the rest of it, as the next INCR's PTTL is.
func TestRefundFixedKeepsWindow(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		fixed := []any{"RL.FIXED", "fx", 2, "10s", "ANCHOR", "FIRST"}
		assert.Equal(t, [5]int64{1, 2, 1, 0, 10000}, wantDecision(t, c, fixed...))
		clk.Set(time.Second)
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "fx", "COST", 1))
		assert.Equal(t, int64(1), wantInt(t, c, "EXISTS", "fx"), "refunded to 0: the key stays until its window ends")
		assert.Equal(t, int64(9000), wantInt(t, c, "PTTL", "fx"))
		info, err := c.Do(ctxT(t), "RL.INFO", "fx").Result()
		if assert.NoError(t, err) {
			assert.Equal(t, int64(0), fieldOf(info, "count"), "RL.INFO's count")
		}
		clk.Set(3 * time.Second)
		assert.Equal(t, [5]int64{1, 2, 1, 0, 7000}, wantDecision(t, c, fixed...), "the next hit counts in the same window")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "fx", "COST", 1))
		assert.Equal(t, int64(0), wantInt(t, c, "RL.REFUND", "fx", "COST", 1), "a key at 0 is full")
		clk.Set(10 * time.Second)
		assert.Equal(t, int64(0), wantInt(t, c, "EXISTS", "fx"), "gone when the window ends")
		assert.Equal(t, [5]int64{1, 2, 1, 0, 10000}, wantDecision(t, c, fixed...), "a new window")
	})
}

// fieldOf returns the field name of an RL.INFO reply (a map in RESP3, a
// flat array in RESP2), or nil.
func fieldOf(reply any, name string) any {
	if m, ok := reply.(map[any]any); ok {
		return m[name]
	}
	flat, _ := reply.([]any)
	for i := 0; i+1 < len(flat); i += 2 {
		if flat[i] == name {
			return flat[i+1]
		}
	}
	return nil
}
