package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRefundWithRule: RL.REFUND key rule params… COST n gives units back
// up to the limit the request names, which the key takes as a decision's
// parameters apply; a rule of another kind than the key's is -WRONGTYPE,
// and the rule's argument errors are the decision commands'.
func TestRefundWithRule(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		wantDecision(t, c, "RL.FIXED", "up:acme", 100, "1h", "COST", 80)
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "up:acme", "FIXED", 100, "1h", "COST", 30))
		assert.Equal(t, int64(50), wantDecision(t, c, "RL.FIXED", "up:acme", 100, "1h", "PEEK")[2]+1)
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "up:acme", "fixed", 60, "1h", "COST", 1000))
		assert.Equal(t, [5]int64{1, 60, 59, 0, 3600000}, wantDecision(t, c, "RL.FIXED", "up:acme", 60, "1h", "PEEK"),
			"full at the limit the refund named, no more")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.REFUND", "up:acme", "FIXED", 60, "1h", "COST", 1), "full already")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.REFUND", "absent", "TOKEN", 10, 10, "1m", "COST", 1), "an absent key is full")

		wantDecision(t, c, "RL.TOKEN", "tok", 10, 10, "1m", "COST", 10)
		assert.Equal(t, int64(1), wantInt(t, c, "RL.REFUND", "tok", "TOKEN", 10, 10, "1m", "COST", 4))
		assert.Equal(t, int64(4), wantDecision(t, c, "RL.TOKEN", "tok", 10, 10, "1m", "PEEK")[2]+1)
		wantErrReply(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "RL.REFUND", "tok", "FIXED", 10, "1m", "COST", 1)
		wantErrReply(t, c, "ERR the rule must be SLIDE, FIXED or TOKEN", "RL.REFUND", "tok", "LEAKY", 10, 10, "1m", "COST", 1)
		wantErrReply(t, c, "ERR wrong number of arguments for 'rl.refund' command", "RL.REFUND", "tok", "TOKEN", 10, 10)
		wantErrReply(t, c, "ERR syntax error", "RL.REFUND", "tok", "TOKEN", 10, 10, "1m", "UNITS", 1)
		wantErrReply(t, c, "ERR syntax error", "RL.REFUND", "tok", "TOKEN", 10, 10, "1m", "COST", 1, "PEEK")
		wantErrReply(t, c, "ERR cost must be at least 1", "RL.REFUND", "tok", "TOKEN", 10, 10, "1m", "COST", 0)
	})
}
