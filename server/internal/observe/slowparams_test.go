package observe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSlowlogParams: each CONFIG parameter reads and sets its own field
// (the threshold shown in microseconds, as Redis shows it), and refuses
// what Redis refuses.
func TestSlowlogParams(t *testing.T) {
	var sl Slowlog
	sl.SlowerThan.Store(int64(10 * time.Millisecond))
	ps := sl.Params()
	byName := map[string]int{}
	for i, p := range ps {
		byName[p.Name] = i
	}
	slower, maxLen, latency := ps[byName["slowlog-log-slower-than"]], ps[byName["slowlog-max-len"]], ps[byName["latency-monitor-threshold"]]
	assert.Len(t, ps, 3)
	assert.Equal(t, "10000", slower.Get())
	slower.Set([]byte("250"))
	assert.Equal(t, int64(250*time.Microsecond), sl.SlowerThan.Load())
	slower.Set([]byte("-5"))
	assert.Equal(t, "-1", slower.Get(), "any negative turns the log off")
	assert.Empty(t, slower.Check([]byte("-1")))
	assert.Equal(t, "argument must be an integer of at least -1", slower.Check([]byte("-2")))
	maxLen.Set([]byte("7"))
	assert.Equal(t, "7", maxLen.Get())
	assert.Equal(t, int64(7), sl.MaxLen.Load())
	assert.Equal(t, "argument must be an integer of at least 0", maxLen.Check([]byte("x")))
	latency.Set([]byte("3"))
	assert.Equal(t, "3", latency.Get())
	assert.Equal(t, int64(3), sl.LatencyMs.Load())
	assert.Equal(t, "argument must be an integer of at least 0", latency.Check([]byte("-1")))
}
