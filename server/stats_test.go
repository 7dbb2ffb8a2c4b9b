package server

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsCountEveryPathAlike checks INFO's decision counters against their
// one definition: every request that is not a peek counts once, as allowed
// or denied (a SHADOW policy's denial also as shadow-denied); peeks count
// nowhere, whichever command sends them.
func TestStatsCountEveryPathAlike(t *testing.T) {
	_, c := startWithClock(t, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "p", "FIXED", 1, 60).Err())
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "sh", "FIXED", 1, 60, "SHADOW").Err())
	for _, tc := range []struct {
		name                 string
		admit, deny, peek    []any
		wantShadow, wantDeny int64
	}{
		{"RL.SLIDE", []any{"RL.SLIDE", "s", 1, 60}, []any{"RL.SLIDE", "s", 1, 60}, []any{"RL.SLIDE", "s", 1, 60, "PEEK"}, 0, 1},
		{"RL.TOKEN", []any{"RL.TOKEN", "t", 1, 1, 60}, []any{"RL.TOKEN", "t", 1, 1, 60}, []any{"RL.TOKEN", "t", 1, 1, 60, "PEEK"}, 0, 1},
		{"RL.FIXED", []any{"RL.FIXED", "f", 1, 60}, []any{"RL.FIXED", "f", 1, 60}, []any{"RL.FIXED", "f", 1, 60, "PEEK"}, 0, 1},
		{"RL.LOG", []any{"RL.LOG", "l", 1, 60}, []any{"RL.LOG", "l", 1, 60}, []any{"RL.LOG", "l", 1, 60, "PEEK"}, 0, 1},
		{"RL.LEAKY", []any{"RL.LEAKY", "q", 1, 1, 60}, []any{"RL.LEAKY", "q", 1, 1, 60}, []any{"RL.LEAKY", "q", 1, 1, 60, "PEEK"}, 0, 1},
		{"CL.THROTTLE", []any{"CL.THROTTLE", "c", 0, 1, 60}, []any{"CL.THROTTLE", "c", 0, 1, 60}, []any{"CL.THROTTLE", "c", 0, 1, 60, 0}, 0, 1},
		{"RL.CHECK", []any{"RL.CHECK", "p", "k"}, []any{"RL.CHECK", "p", "k"}, []any{"RL.CHECK", "p", "k", "PEEK"}, 0, 1},
		{"RL.CHECK SHADOW", []any{"RL.CHECK", "sh", "k"}, []any{"RL.CHECK", "sh", "k"}, []any{"RL.CHECK", "sh", "k", "PEEK"}, 1, 1},
	} {
		before := infoStats(t, c)
		require.NoError(t, c.Do(ctx, tc.admit...).Err())
		require.NoError(t, c.Do(ctx, tc.deny...).Err())
		require.NoError(t, c.Do(ctx, tc.peek...).Err())
		after := infoStats(t, c)
		assert.Equalf(t, int64(1), after["rl_allowed"]-before["rl_allowed"], "%s: rl_allowed", tc.name)
		assert.Equalf(t, tc.wantDeny, after["rl_denied"]-before["rl_denied"], "%s: rl_denied", tc.name)
		assert.Equalf(t, tc.wantShadow, after["rl_shadow_denied"]-before["rl_shadow_denied"], "%s: rl_shadow_denied", tc.name)
		assert.Zerof(t, after["rl_errors"]-before["rl_errors"], "%s: rl_errors", tc.name)
	}
	before := infoStats(t, c)
	c.Do(ctx, "RL.TOKEN", "s", 1, 1, 60)         // WRONGTYPE
	c.Do(ctx, "RL.TOKEN", "s", 1, 1, 60, "PEEK") // WRONGTYPE, but a peek
	c.Do(ctx, "CL.THROTTLE", "s", 0, 1, 60)      // WRONGTYPE
	assert.Equal(t, int64(2), infoStats(t, c)["rl_errors"]-before["rl_errors"], "refusals that are not peeks")
}

// infoStats returns INFO stats' rl_ counters.
func infoStats(t *testing.T, c interface {
	Info(ctx context.Context, sections ...string) *redis.StringCmd
}) map[string]int64 {
	t.Helper()
	info := c.Info(ctxT(t), "stats").Val()
	out := map[string]int64{}
	for _, f := range []string{"rl_allowed", "rl_denied", "rl_shadow_denied", "rl_errors"} {
		out[f] = int64(atoi(t, infoField(info, f)))
	}
	return out
}
