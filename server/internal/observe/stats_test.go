package observe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/server/internal/core"
)

// A connection's runs reach the command's counters whole, once flushed.
func TestRunsFlushIntoStats(t *testing.T) {
	var st core.Stats
	var r Runs
	for _, d := range []time.Duration{5 * time.Microsecond, 20 * time.Microsecond, 2 * time.Second} {
		r.Observe(d)
	}
	st.Observe(30 * time.Microsecond)
	assert.Zero(t, st.Calls.Load()-1, "nothing counted before the flush")
	r.Flush(&st)
	r.Flush(&st) // a second flush adds nothing
	assert.Equal(t, int64(4), st.Calls.Load())
	assert.Equal(t, int64(2_000_055), st.Usec.Load())
	counts := st.Counts()
	assert.Equal(t, []int64{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, counts)
	assert.Equal(t, "25.000", Percentile(counts, 0.5))
	assert.Equal(t, "50.000", Percentile(counts, 0.75))
	assert.Equal(t, "inf", Percentile(counts, 0.99))
}
