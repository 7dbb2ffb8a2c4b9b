package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRefundLog: RL.REFUND key COST n gives a LOG key its newest units
// back, as if the latest requests had not been admitted, never beyond
// full; a key refunded to nothing is gone; a rule form for LOG does not
// exist, and a LEAKY key is still -WRONGTYPE.
func TestRefundLog(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		for i := 0; i < 3; i++ {
			assert.Equal(t, int64(1), wantDecision(t, c, "RL.LOG", "lg", 3, "10s")[0])
			clk.Set(time.Duration(i+1) * time.Millisecond)
		}
		assert.Equal(t, int64(0), wantDecision(t, c, "RL.LOG", "lg", 3, "10s")[0], "full")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "lg", "COST", 1))
		assert.Equal(t, [5]int64{1, 3, 0, 0, 10000}, wantDecision(t, c, "RL.LOG", "lg", 3, "10s"), "the refunded unit is free again")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "lg", "COST", 2))
		assert.Equal(t, int64(1), wantDecision(t, c, "RL.LOG", "lg", 3, "10s", "PEEK")[2], "one unit left: a peek leaves 1")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "lg", "COST", 100))
		assert.Equal(t, int64(0), wantInt(t, c, "EXISTS", "lg"), "refunded to nothing: gone")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.REFUND", "lg", "COST", 1), "an absent key is full")

		wantErrReply(t, c, "ERR the rule must be SLIDE, FIXED or TOKEN", "RL.REFUND", "lg", "LOG", 3, "10s", "COST", 1)
		wantDecision(t, c, "RL.LEAKY", "lk", 3, 1, "1s")
		wantErrReply(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "RL.REFUND", "lk", "COST", 1)
	})
}
