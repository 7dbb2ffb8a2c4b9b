package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuthGuardBound measures the brute-force bound: a guesser at one user
// from one address that tries as fast as the guard lets it, for three
// simulated hours, never gets more than the limit (10, at most 20 is the
// goal) of its passwords checked in any minute.
func TestAuthGuardBound(t *testing.T) {
	g, err := NewGuard(10, time.Minute) // the server's defaults
	require.NoError(t, err)
	at := time.Unix(1_700_000_000, 0)
	end := at.Add(3 * time.Hour)
	var checked []time.Time
	for at.Before(end) {
		delay, wait := g.Admit("10.231.25.9:4000", "default", at)
		if wait > 0 {
			at = at.Add(wait)
			continue
		}
		at = at.Add(delay)
		checked = append(checked, at)
		g.Failed("10.231.25.9:4001", at)
		at = at.Add(time.Millisecond) // the next guess, as fast as a client can send it
	}
	most := 0
	for i := range checked {
		n := 0
		for j := i; j < len(checked) && checked[j].Sub(checked[i]) < time.Minute; j++ {
			n++
		}
		most = max(most, n)
	}
	t.Logf("%d guesses checked in 3 h; at most %d in any minute", len(checked), most)
	assert.LessOrEqual(t, most, 10)
	assert.LessOrEqual(t, most, 20, "issue 26's bound")
}

// TestAuthGuardParallelTries: tries that arrive together are each counted
// before any password is checked, so they cannot all slip under the limit.
func TestAuthGuardParallelTries(t *testing.T) {
	g, err := NewGuard(4, time.Minute)
	require.NoError(t, err)
	at := time.Unix(1_700_000_000, 0)
	admitted := 0
	for range 50 {
		if _, wait := g.Admit("10.231.25.9:1", "default", at); wait == 0 {
			admitted++
		}
	}
	assert.Equal(t, 4, admitted)
}

// TestAuthGuardSlowsBeforeRefusing walks the guard's schedule on a fake
// clock: free tries, then growing holds, then refusal; a right password
// clears the user's count; other users and addresses are apart.
func TestAuthGuardSlowsBeforeRefusing(t *testing.T) {
	g, err := NewGuard(4, 16*time.Second) // a step of 1 s
	require.NoError(t, err)
	at := time.Unix(1_700_000_000, 0)
	var delays []time.Duration
	for range 4 {
		delay, wait := g.Admit("a:1", "u", at)
		require.Zero(t, wait)
		delays = append(delays, delay)
		g.Failed("a:1", at)
	}
	assert.Equal(t, []time.Duration{0, 0, time.Second, 2 * time.Second}, delays)
	_, wait := g.Admit("a:1", "u", at)
	assert.Positive(t, wait, "past the limit: refused")
	delay, wait := g.Admit("a:1", "v", at)
	assert.Zero(t, delay+wait, "another user at the address is apart")
	delay, wait = g.Admit("b:1", "u", at)
	assert.Zero(t, delay+wait, "the user at another address is apart")

	g.Passed("a:1", "v")
	delay, wait = g.Admit("a:1", "u", at.Add(16*time.Second))
	assert.Zero(t, delay+wait, "failures leave the window")
	g.Failed("a:1", at)
	g.Passed("a:1", "u")
	delay, _ = g.Admit("a:1", "u", at.Add(16*time.Second))
	assert.Zero(t, delay, "a right password clears the count")
}
