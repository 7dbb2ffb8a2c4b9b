package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolicyCaps: a policy's name is capped, and so is the number of
// policies; redefining one is not a new one.
func TestPolicyCaps(t *testing.T) {
	_, addr := startServer(t, Config{MaxPolicies: 3})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	assert.EqualError(t, c.Do(ctx, "RL.POLICY", "SET", strings.Repeat("n", 257), "SLIDE", 1, 60).Err(),
		"ERR policy name must be at most 256 bytes")
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", strings.Repeat("n", 256), "SLIDE", 1, 60).Err())
	for i := range 2 {
		require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", fmt.Sprint("p", i), "SLIDE", 1, 60).Err())
	}
	assert.EqualError(t, c.Do(ctx, "RL.POLICY", "SET", "one-too-many", "SLIDE", 1, 60).Err(),
		"ERR too many policies: max-policies is 3")
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "p0", "SLIDE", 2, 60).Err(), "redefining is not adding")
	require.NoError(t, c.Do(ctx, "RL.POLICY", "DEL", "p1").Err())
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "p2", "SLIDE", 1, 60).Err())
}

// TestPoliciesCountInMaxMemory: policies take their share of --maxmemory,
// and give it back when deleted.
func TestPoliciesCountInMaxMemory(t *testing.T) {
	probe, err := shard.New(shard.Config{Shards: 4})
	require.NoError(t, err)
	room := probe.Stats().Bytes + 2000 // an empty store's pages, and room for a few policies
	m, err := shard.New(shard.Config{Shards: 4, MaxMemory: room})
	require.NoError(t, err)
	_, addr := startServer(t, Config{Store: m})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	name := strings.Repeat("x", 200)
	var set int
	for set = 0; set < 100; set++ {
		if err := c.Do(ctx, "RL.POLICY", "SET", fmt.Sprint(name, set), "SLIDE", 1, 60, "TOKEN", 5, 1, 60).Err(); err != nil {
			assert.EqualError(t, err, decide.ErrOOM)
			break
		}
	}
	require.Less(t, set, 100, "policies never met --maxmemory")
	require.NotZero(t, set)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "DEL", fmt.Sprint(name, 0)).Err())
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", fmt.Sprint(name, set), "SLIDE", 1, 60, "TOKEN", 5, 1, 60).Err(),
		"a deleted policy gave its bytes back")
}
