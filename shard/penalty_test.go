package shard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// TestPenalizeIsDecideAllsPenalty: a penalty set by Penalize blocks
// DecideAll's rules as one DecideAll set itself does, and PenaltyLeft reads
// what either set.
func TestPenalizeIsDecideAllsPenalty(t *testing.T) {
	m := newMap(t, Config{})
	pk := ruleKey("p", 255, "k")
	q := &Multi{Keys: policyKeys("p", 1, "k"), Params: []window.Params{fixedP(5, time.Minute)}, Penalty: pk, For: 10 * time.Second}
	sec := int64(time.Second)
	assert.Zero(t, m.PenaltyLeft([]byte(route), pk, t0))
	require.True(t, m.Penalize([]byte(route), pk, 10*time.Second, t0))
	assert.Equal(t, 7*time.Second, m.PenaltyLeft([]byte(route), pk, t0+3*sec))
	ds, left, err := m.DecideAll([]byte(route), q, t0+3*sec, 1, false, nil)
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, left, "DecideAll sees the penalty")
	assert.True(t, ds[0].Allowed, "as a peek: the rule itself admits")
	assert.Zero(t, m.PenaltyLeft([]byte(route), pk, t0+10*sec))
	assert.False(t, m.Penalize([]byte(route), pk, 0, t0), "no penalty of 0")
	q.Params[0] = fixedP(1, time.Minute)
	_, _, _ = m.DecideAll([]byte(route), q, t0+11*sec, 1, false, nil)
	_, left, _ = m.DecideAll([]byte(route), q, t0+12*sec, 1, false, nil)
	require.Equal(t, 10*time.Second, left)
	assert.Equal(t, 9*time.Second, m.PenaltyLeft([]byte(route), pk, t0+13*sec), "PenaltyLeft reads DecideAll's penalty")
}
