package main

import (
	"context"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessPolicySurvivesKill9 kills rlstore with SIGKILL right after
// RL.POLICY SET replies +OK: the restarted server must still have the policy.
func TestProcessPolicySurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p := startProc(t, nil, "--port", "0", "--data-dir", dir)
	c := newClient(t, p.Addr(t))
	require.Equal(t, "OK", c.Do(ctx, "RL.POLICY", "SET", "api", "SLIDE", 10, 60, "TOKEN", 2, 1, "3s", "PENALTY", "1m").Val())
	p.Signal(t, syscall.SIGKILL)
	<-p.Exited

	p2 := startProc(t, nil, "--port", "0", "--data-dir", dir)
	c2 := newClient(t, p2.Addr(t))
	def, err := c2.Do(ctx, "RL.POLICY", "GET", "api").StringSlice()
	require.NoError(t, err)
	assert.Equal(t, []string{"SLIDE", "10", "60", "TOKEN", "2", "1", "3s", "PENALTY", "1m"}, def)
	v, err := c2.Do(ctx, "RL.CHECK", "api", "user").Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 1, 0, 3000, 1}, v)
}

// TestProcessPoliciesInMemoryWithoutDataDir: with no --data-dir the server
// says so and RL.POLICY SET still works, in memory.
func TestProcessPoliciesInMemoryWithoutDataDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p := startProc(t, nil, "--port", "0")
	c := newClient(t, p.Addr(t))
	require.Equal(t, "OK", c.Do(ctx, "RL.POLICY", "SET", "p", "FIXED", 1, 60).Val())
	assert.Contains(t, p.Log.String(), "policies are in memory only")
}
