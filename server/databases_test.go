package server

import (
	"testing"

	"github.com/rlstore/rlstore/server/internal/keyspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlushDB: FLUSHDB is FLUSHALL, as in a Redis with one database, which
// test suites of rate-limit libraries call between tests.
func TestFlushDB(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		for _, args := range [][]any{{"FLUSHDB"}, {"FLUSHDB", "ASYNC"}, {"flushdb", "sync"}} {
			wantDecision(t, c, "RL.SLIDE", "a", 1, 60)
			wantDecision(t, c, "RL.TOKEN", "b", 1, 1, "1s")
			require.Equal(t, int64(2), wantInt(t, c, "DBSIZE"))
			wantReply(t, c, "OK", args...)
			assert.Equal(t, int64(0), wantInt(t, c, "DBSIZE"), "%v", args)
			assert.Equal(t, [5]int64{1, 1, 0, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "a", 1, 60), "%v left state behind", args)
			wantReply(t, c, "OK", "FLUSHDB")
		}
		require.NoError(t, c.FlushDB(ctxT(t)).Err(), "go-redis's FlushDB")
	})
}

// TestDatabaseErrors: SWAPDB and MOVE answer as a redis-server with
// "databases 1" does, and FLUSHDB's arguments are FLUSHALL's.
func TestDatabaseErrors(t *testing.T) {
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"FLUSHDB", "NOW"}, "ERR syntax error"},
		{[]any{"FLUSHDB", "ASYNC", "SYNC"}, "ERR syntax error"},
		{[]any{"SWAPDB", 0, 1}, "ERR DB index is out of range"},
		{[]any{"SWAPDB", 1, 0}, "ERR DB index is out of range"},
		{[]any{"SWAPDB", "x", 0}, "ERR invalid first DB index"},
		{[]any{"SWAPDB", 0, "y"}, "ERR invalid second DB index"},
		{[]any{"SWAPDB", 0}, "ERR wrong number of arguments for 'swapdb' command"},
		{[]any{"MOVE", "k", 1}, "ERR DB index is out of range"},
		{[]any{"MOVE", "k", 0}, "ERR source and destination objects are the same"},
		{[]any{"MOVE", "k", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"MOVE", "k"}, "ERR wrong number of arguments for 'move' command"},
	}
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		for _, tc := range cases {
			wantErrReply(t, c, tc.want, tc.args...)
		}
		wantReply(t, c, "OK", "SWAPDB", 0, 0)
	})
}

// TestDatabaseErrorsMatchRedis sends the same calls to a redis-server
// started with "databases 1", where one is installed.
func TestDatabaseErrorsMatchRedis(t *testing.T) {
	r := startRedisServer(t, "--databases", "1")
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	require.NoError(t, r.Set(ctx, "k", "v", 0).Err())
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 5, 60).Err())
	for _, args := range [][]any{
		{"FLUSHDB", "NOW"}, {"SWAPDB", 0, 1}, {"SWAPDB", 0, 0}, {"SWAPDB", "x", 0}, {"SWAPDB", 0, "y"},
		{"MOVE", "k", 1}, {"MOVE", "k", 0}, {"MOVE", "k", "x"}, {"MOVE", "nokey", 0}, {"FLUSHDB", "ASYNC"},
	} {
		want, got := r.Do(ctx, args...), c.Do(ctx, args...)
		assert.Equal(t, want.Err(), got.Err(), "%v", args)
		assert.Equal(t, want.Val(), got.Val(), "%v", args)
	}
}

// TestFlushDBFollowsFlushAllRename: a configuration that took FLUSHALL from
// clients, written before rlstore had FLUSHDB, takes FLUSHDB too.
func TestFlushDBFollowsFlushAllRename(t *testing.T) {
	for _, renames := range []map[string]string{{"FLUSHALL": ""}, {"flushall": "flush-4d2a"}} {
		_, addr := startServer(t, Config{RenameCommands: renames})
		c, ctx := newClient(t, addr, 2), ctxT(t)
		assert.EqualError(t, c.Do(ctx, "FLUSHDB").Err(), "ERR unknown command 'FLUSHDB', with args beginning with: ", "%v", renames)
	}
	_, addr := startServer(t, Config{RenameCommands: map[string]string{"FLUSHALL": "", "FLUSHDB": "flushdb-77"}})
	c, ctx := newClient(t, addr, 2), ctxT(t)
	assert.Equal(t, "OK", c.Do(ctx, "FLUSHDB-77").Val(), "FLUSHDB renamed on its own")
}

// TestFlushDBInvalidatesEverything: a tracking client is told to drop its
// whole cache, as after FLUSHALL.
func TestFlushDBInvalidatesEverything(t *testing.T) {
	_, addr := startServer(t, Config{})
	r, w := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, r)
	require.Equal(t, "OK", r.call(t, "CLIENT", "TRACKING", "ON"))
	r.call(t, "TTL", "k")
	w.call(t, "FLUSHDB")
	assert.Equal(t, ">[invalidate nil]", readFrame(t, r), "FLUSHDB invalidates every key")
}

// TestDatabaseCommandsInACluster: a cluster node answers SWAPDB and MOVE
// as a Redis Cluster node does.
func TestDatabaseCommandsInACluster(t *testing.T) {
	nodes := startTestCluster(t, 1, clusterOpts{})
	c, ctx := newClient(t, nodes[0].addr, 2), ctxT(t)
	assert.EqualError(t, c.Do(ctx, "SWAPDB", 0, 0).Err(), keyspace.ErrSwapDBCluster)
	assert.EqualError(t, c.Do(ctx, "MOVE", "k", 0).Err(), keyspace.ErrMoveCluster)
	assert.Equal(t, "OK", c.Do(ctx, "FLUSHDB").Val())
}
