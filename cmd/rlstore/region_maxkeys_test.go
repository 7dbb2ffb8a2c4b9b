package main

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegionProcessMaxKeys: us runs with --region-max-keys 5; eu spreads 40
// keys no other region decides. us holds 5 of them, refuses the rest and
// says so, and eu counts the refused units unacknowledged.
func TestRegionProcessMaxKeys(t *testing.T) {
	ports := []string{testport.Stable(t), testport.Stable(t), testport.Stable(t)}
	procs := []*proc{startRegionProc(t, 0, ports), startRegionProc(t, 1, ports, "--region-max-keys", "5"), startRegionProc(t, 2, ports)}
	for _, p := range procs {
		p.WaitLog(t, regexp.MustCompile(`region sync up.*region=`))
	}
	eu, us := newClient(t, procs[0].Addr(t)), newClient(t, procs[1].Addr(t))
	ctx := context.Background()
	field := func(info, name string) int {
		m := regexp.MustCompile(`(?m)^` + name + `:(\d+)\r$`).FindStringSubmatch(info)
		require.NotNil(t, m, "%s in %s", name, info)
		n, _ := strconv.Atoi(m[1])
		return n
	}
	until, win := time.Now().Add(2*deadline), unturnedWindow()
	for i := 0; i < 40; {
		v, err := eu.Do(ctx, "RL.FIXED", "spread:"+strconv.Itoa(i), 100, win).Int64Slice()
		require.NoError(t, err)
		if v[0] == 1 {
			i++ // eu admits nothing until us and ap have echoed
		}
		require.True(t, time.Now().Before(until), "eu admitted %d keys", i)
	}
	var info string
	for field(info+"rl_region_refused_by_peers:0\r\n", "rl_region_refused_by_peers") < 35 && time.Now().Before(until) {
		var err error
		info, err = eu.Info(ctx, "regions").Result()
		require.NoError(t, err)
	}
	assert.GreaterOrEqual(t, field(info, "rl_region_refused_by_peers"), 35, "eu's entries us refused")
	assert.Positive(t, field(info, "rl_region_unacked_units"))
	uinfo, err := us.Info(ctx, "regions").Result()
	require.NoError(t, err)
	assert.Equal(t, 5, field(uinfo, "rl_region_max_keys"))
	assert.Equal(t, 5, field(uinfo, "rl_region_remote_keys"))
	assert.Equal(t, 5, field(uinfo, "rl_region_keys"))
	assert.GreaterOrEqual(t, field(uinfo, "rl_region_keys_refused"), 35)
}
