package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestExpiredKeyIsAbsent is the report's case: once RL.SLIDE's state has
// expired, EXISTS says 0 and TYPE none, so every other command must treat the
// key as new too, before Sweep has freed it.
func TestExpiredKeyIsAbsent(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		for i, next := range [][]any{
			{"RL.TOKEN", "k", 5, 1, "1s"},
			{"RL.FIXED", "k", 5, "1s"},
			{"RL.LOG", "k", 5, "1s"},
			{"RL.LEAKY", "k", 5, 1, "1s"},
			{"RL.SLIDE", "k", 5, "1s"},
		} {
			start := time.Duration(i) * 10 * time.Second
			clk.Set(start)
			wantInt(t, c, "DEL", "k")
			wantDecision(t, c, "RL.SLIDE", "k", 5, "1s", "COST", 5)
			clk.Set(start + 2300*time.Millisecond) // expired at +1 s; the 2 s grace keeps it until +3 s
			assert.EqualValues(t, 0, wantInt(t, c, "EXISTS", "k"))
			d := wantDecision(t, c, next...)
			assert.EqualValuesf(t, 1, d[0], "%v over an expired key", next)
		}
		clk.Set(100 * time.Second)
		wantDecision(t, c, "RL.FIXED", "t", 5, "1s")
		clk.Set(102 * time.Second)
		r, err := c.Do(ctxT(t), "CL.THROTTLE", "t", 4, 5, 1).Int64Slice()
		if assert.NoError(t, err, "CL.THROTTLE over an expired key") {
			assert.EqualValues(t, 0, r[0])
		}
	})
}
