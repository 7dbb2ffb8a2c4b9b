package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegionProcessRestartAll: eu takes its 68 of a sliding one-hour
// limit (RL.SLIDE, whose window does not turn during the test); then
// all three regions are killed (-9) at once and started again on their
// ports with their data directories. No region can echo eu's units back to
// it (the others lost theirs too), so only eu's own log has them: it admits
// nothing more, us and ap their reserves, and the key is in eu's keyspace.
// Without --data-dir eu would start the window over and take 68 again.
func TestRegionProcessRestartAll(t *testing.T) {
	ports := []string{testport.Stable(t), testport.Stable(t), testport.Stable(t)}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	start := func() ([]*proc, []*redis.Client) {
		procs, clients := make([]*proc, 3), make([]*redis.Client, 3)
		for i := range regionNames {
			procs[i] = startRegionProc(t, i, ports, "--data-dir", dirs[i])
			clients[i] = newClient(t, procs[i].Addr(t))
		}
		for _, p := range procs {
			p.WaitLog(t, regexp.MustCompile(`region sync up.*region=`))
		}
		return procs, clients
	}
	ctx, until := context.Background(), time.Now().Add(3*deadline)
	admits := func(c *redis.Client, n int) int {
		got := 0
		for range n {
			v, err := c.Do(ctx, "RL.SLIDE", "api:1", 100, 3600).Int64Slice()
			require.NoError(t, err)
			got += int(v[0])
		}
		return got
	}
	waitInfo := func(c *redis.Client, section, want string) {
		for info := ""; !strings.Contains(info, want); {
			require.True(t, time.Now().Before(until), "timed out waiting for %s", want)
			var err error
			info, err = c.Info(ctx, section).Result()
			require.NoError(t, err)
		}
	}
	procs, clients := start()
	waitInfo(clients[0], "regions", "rl_region_recovered:1")
	before := 0
	for before < 68 && time.Now().Before(until) {
		before += admits(clients[0], 10)
	}
	require.Equal(t, 68, before, "eu: L less the others' reserves")
	waitInfo(clients[0], "regions", "rl_region_unacked_units:0\r\n") // the sync that carried them copied them to the key store
	waitFsyncAfter(ctx, t, clients[0], time.Now())
	for _, p := range procs {
		p.Kill()
	}

	_, clients = start()
	for _, c := range clients {
		waitInfo(c, "regions", "rl_region_recovered:1")
	}
	eu := clients[0]
	assert.Equal(t, int64(1), eu.Exists(ctx, "api:1").Val(), "api:1 is in eu's keyspace")
	assert.Equal(t, "slide", eu.Type(ctx, "api:1").Val())
	assert.Zero(t, admits(eu, 20), "eu took back its 68 from its data directory")
	others := 0
	for others < 32 && time.Now().Before(until) {
		others += admits(clients[1], 5) + admits(clients[2], 5)
	}
	assert.Equal(t, 32, others, "us and ap: their reserves")
	assert.Zero(t, admits(eu, 20)+admits(clients[1], 5)+admits(clients[2], 5), "the limit, and no more")
}
