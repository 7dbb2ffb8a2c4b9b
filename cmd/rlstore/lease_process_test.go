package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessLeasesSurviveKill9: with --appendfsync always, leases
// acquired before a SIGKILL are all there after the restart, none twice:
// the limits still bind, each lease releases once, and a reservation
// commits once.
func TestProcessLeasesSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p := startProc(t, nil, "--port", "0", "--data-dir", dir, "--appendfsync", "always")
	c := newClient(t, p.Addr(t))
	const keys, limit = 20, 3
	for k := range keys {
		for i := range limit {
			v, err := c.Do(ctx, "RL.ACQUIRE", fmt.Sprint("pool:", k), limit, "1h", "ID", fmt.Sprint("w", i)).Slice()
			require.NoError(t, err)
			require.Equal(t, int64(1), v[0])
		}
	}
	v, err := c.Do(ctx, "RL.RESERVE", "llm", "FIXED", 100, "1h", "COST", 60, "TTL", "1h", "ID", "r").Slice()
	require.NoError(t, err)
	require.Equal(t, int64(1), v[0])
	p.Signal(t, syscall.SIGKILL)
	<-p.Exited

	p2 := startProc(t, nil, "--port", "0", "--data-dir", dir, "--appendfsync", "always")
	c2 := newClient(t, p2.Addr(t))
	for k := range keys {
		key := fmt.Sprint("pool:", k)
		v, err := c2.Do(ctx, "RL.ACQUIRE", key, limit, "1h", "ID", "late").Slice()
		require.NoError(t, err)
		assert.Equal(t, int64(0), v[0], "%s: its %d leases came back, the limit binds", key, limit)
		for i := range limit {
			id := fmt.Sprint("w", i)
			assert.Equal(t, int64(1), c2.Do(ctx, "RL.RELEASE", key, id).Val(), "%s %s released once", key, id)
			assert.Equal(t, int64(0), c2.Do(ctx, "RL.RELEASE", key, id).Val(), "%s %s not twice", key, id)
		}
	}
	assert.Equal(t, int64(1), c2.Do(ctx, "RL.COMMIT", "llm", "r", "ACTUAL", 10).Val())
	assert.Equal(t, int64(0), c2.Do(ctx, "RL.COMMIT", "llm", "r", "ACTUAL", 10).Val())
}
