package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDebugSetClock: with EnableDebugCommand, DEBUG SET-CLOCK stops the
// clock every decision reads at the given instant, so a replayed request
// gets the same reply, times included, as when it was recorded; 0 lets the
// clock run again.
func TestDebugSetClock(t *testing.T) {
	_, addr := startServer(t, Config{EnableDebugCommand: DebugYes})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	require.NoError(t, c.Do(ctx, "DEBUG", "SET-CLOCK", at.UnixNano()).Err())
	now, err := c.Time(ctx).Result()
	require.NoError(t, err)
	assert.Equal(t, at.Truncate(time.Microsecond), now.UTC(), "TIME after SET-CLOCK")

	fixed := func() []any {
		got, err := c.Do(ctx, "RL.FIXED", "k", 2, "10s", "ANCHOR", "FIRST").Slice()
		require.NoError(t, err)
		return got
	}
	// RL.FIXED's reply: allowed, limit, remaining, wait ms, reset ms.
	assert.Equal(t, []any{int64(1), int64(2), int64(1), int64(0), int64(10000)}, fixed())
	require.NoError(t, c.Do(ctx, "DEBUG", "SET-CLOCK", at.Add(2500*time.Millisecond).UnixNano()).Err())
	assert.Equal(t, []any{int64(1), int64(2), int64(0), int64(0), int64(7500)}, fixed())
	assert.Equal(t, []any{int64(0), int64(2), int64(0), int64(7500), int64(7500)}, fixed(), "the same instant: the same reply")
	pttl, err := c.Do(ctx, "PTTL", "k").Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(7500), pttl)
	require.NoError(t, c.Do(ctx, "DEBUG", "SET-CLOCK", at.Add(10*time.Second).UnixNano()).Err())
	assert.Equal(t, []any{int64(1), int64(2), int64(1), int64(0), int64(10000)}, fixed(), "the window ended with the set clock")

	require.NoError(t, c.Do(ctx, "DEBUG", "SET-CLOCK", 0).Err())
	now, err = c.Time(ctx).Result()
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), now, time.Minute, "SET-CLOCK 0: the real clock again")

	assert.EqualError(t, c.Do(ctx, "DEBUG", "SET-CLOCK", "soon").Err(), string(errArgNotInt))
	assert.EqualError(t, c.Do(ctx, "DEBUG", "SET-CLOCK", -1).Err(), string(errArgNotInt))
	assert.ErrorContains(t, c.Do(ctx, "DEBUG", "SLEEP", 0).Err(), "unknown subcommand")
	help, err := c.Do(ctx, "DEBUG", "HELP").StringSlice()
	require.NoError(t, err)
	assert.Contains(t, help[0], "SET-CLOCK")
}

// TestDebugOffByDefault: without EnableDebugCommand there is no DEBUG, so
// no client can move the clock; an unknown setting is refused by New.
func TestDebugOffByDefault(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	err := c.Do(ctxT(t), "DEBUG", "SET-CLOCK", 1).Err()
	assert.ErrorContains(t, err, "ERR unknown command 'DEBUG'")
	_, err = New(Config{Store: mustStore(t), EnableDebugCommand: "maybe"})
	assert.Error(t, err)
}

// TestDebugLocal: with DebugLocal only loopback clients may run DEBUG, and
// others get Redis's wording.
func TestDebugLocal(t *testing.T) {
	_, addr := startServer(t, Config{EnableDebugCommand: DebugLocal})
	c := newClient(t, addr, 2)
	require.NoError(t, c.Do(ctxT(t), "DEBUG", "SET-CLOCK", 1e18).Err(), "a loopback client")
	// the rule for remote addresses is debugcmd's TestAllowed
}
