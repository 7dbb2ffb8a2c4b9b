package server

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/shard"
)

// TestRegionMaxMemory: the region table counts in --maxmemory as the key
// store does. us has room for about ten of the keys eu spreads on top of
// its empty store: past that it refuses eu's new keys (eu hears of it and
// keeps their units unacknowledged), INFO memory's used_memory_dataset
// holds the table's bytes (rl_region_bytes), and a key us decides itself
// then meets -OOM. Before, the table grew past --maxmemory unseen, bounded
// only by --region-max-keys.
func TestRegionMaxMemory(t *testing.T) {
	empty, err := shard.New(shard.Config{})
	require.NoError(t, err)
	base := empty.Stats().Bytes
	rs := startRegionsWith(t, []string{"eu", "us"}, nil, func(name string) Config {
		cfg := shard.Config{}
		if name == "us" {
			cfg.MaxMemory = base + 10*700 // about ten keys held for eu (rl_region_bytes / rl_region_remote_keys)
		}
		m, err := shard.New(cfg)
		require.NoError(t, err)
		return Config{Store: m}
	})
	waitRecovered(t, rs)
	ctx, eu, us := context.Background(), rs[0], rs[1]
	for i := range 50 {
		require.NoError(t, eu.rdb.Do(ctx, "RL.FIXED", "spread:"+strconv.Itoa(i), 100, 60).Err())
	}
	eventually(t, "us to refuse eu's keys past its memory", func() bool {
		n, _ := strconv.Atoi(infoField(regionInfo(t, eu), "rl_region_refused_by_peers"))
		return n >= 30
	})
	inf := regionInfo(t, us)
	held, _ := strconv.Atoi(infoField(inf, "rl_region_remote_keys"))
	bytes, _ := strconv.ParseInt(infoField(inf, "rl_region_bytes"), 10, 64)
	assert.Positive(t, held)
	assert.LessOrEqual(t, held, 20, "us's keys held for eu")
	assert.Positive(t, bytes)
	assert.LessOrEqual(t, base+bytes, base+10*700, "the table within --maxmemory")
	t.Logf("us holds %d keys for eu in %d bytes (%d a key)", held, bytes, bytes/int64(held))

	mem, err := us.rdb.Info(ctx, "memory").Result()
	require.NoError(t, err)
	dataset, _ := strconv.ParseInt(infoField(mem, "used_memory_dataset"), 10, 64)
	assert.GreaterOrEqual(t, dataset, base+bytes, "used_memory_dataset counts the region table")

	// As in Redis, a write is refused once used memory is past maxmemory:
	// the first new key may take what little room is left, not the next.
	_ = us.rdb.Do(ctx, "RL.FIXED", "mine:1", 100, 60).Err()
	err = us.rdb.Do(ctx, "RL.FIXED", "mine:2", 100, 60).Err()
	require.Error(t, err, "a new key of us's own, with the table filling --maxmemory")
	assert.Equal(t, "OOM command not allowed when used memory > 'maxmemory'.", err.Error())
	assert.NotEqual(t, "0", infoField(regionInfo(t, eu), "rl_region_unacked_units"), "eu's units us refused are not acknowledged")
}
