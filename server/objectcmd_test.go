package server

import (
	"testing"

	"github.com/rlstore/rlstore/server/internal/keyspace"
	"github.com/rlstore/rlstore/server/internal/multi"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryObjectWatchAndMaxmemory(t *testing.T) {
	m, err := shard.New(shard.Config{MaxMemory: 1 << 20})
	require.NoError(t, err)
	_, addr := startServer(t, Config{Store: m})
	bothProtocols(t, func(t *testing.T, proto int) {
		c, ctx := newClient(t, addr, proto), ctxT(t)
		require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 10, 60).Err())
		n, err := c.Do(ctx, "MEMORY", "USAGE", "k").Int64()
		require.NoError(t, err)
		assert.Greater(t, n, int64(24))
		n2, err := c.Do(ctx, "MEMORY", "USAGE", "k", "SAMPLES", "5").Int64()
		require.NoError(t, err)
		assert.Equal(t, n, n2)
		assert.True(t, isNil(c.Do(ctx, "MEMORY", "USAGE", "missing").Err()))

		assert.Equal(t, "slide", c.Do(ctx, "OBJECT", "ENCODING", "k").Val())
		assert.True(t, isNil(c.Do(ctx, "OBJECT", "ENCODING", "missing").Err()))
		assert.EqualError(t, c.Do(ctx, "OBJECT", "FREQ", "k").Err(), keyspace.ErrNoFreq)
		assert.EqualError(t, c.Do(ctx, "OBJECT", "IDLETIME", "k").Err(), keyspace.ErrNoIdle)
		assert.EqualValues(t, 1, c.Do(ctx, "OBJECT", "REFCOUNT", "k").Val())

		assert.Equal(t, map[string]string{"maxmemory": "1048576", "maxmemory-clients": "268435456", "maxmemory-policy": "noeviction"},
			c.ConfigGet(ctx, "maxmemory*").Val())

		assert.EqualError(t, c.Do(ctx, "WATCH", "k").Err(), multi.ErrNoWatch)
		assert.Equal(t, "OK", c.Do(ctx, "UNWATCH").Val())
	})
}

func isNil(err error) bool { return err != nil && err.Error() == "redis: nil" }
