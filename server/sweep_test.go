package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSweepPace: sweeps visit about a second's share of the keys while
// they find little to free, never fewer than minSweep slots nor more than
// the budget, and the whole budget while more than one visit in ten frees
// a key.
func TestSweepPace(t *testing.T) {
	p := sweepPace{max: 16384, perSecond: 10}
	assert.Equal(t, minSweep, p.budget(0))
	assert.Equal(t, minSweep, p.budget(5000))
	assert.Equal(t, 3300, p.budget(33000))
	assert.Equal(t, 16384, p.budget(1_000_000))

	p.swept(3300, 331) // just over one in ten: catch up
	assert.Equal(t, 16384, p.budget(33000))
	p.swept(16384, 1638) // one in ten or fewer: back to the share
	assert.Equal(t, 3300, p.budget(33000))

	small := sweepPace{max: 100, perSecond: 10}
	assert.Equal(t, 100, small.budget(1_000_000), "--sweep-budget stays the most a sweep visits")
	assert.Equal(t, 100, small.budget(0))
}
