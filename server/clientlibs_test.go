package server

import (
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests connect each Go client library with its default options, as
// its users would, to a server that requires a password, and send every
// command through the library's generic call, then a transaction through
// its own API.

func startAuthServer(t *testing.T) string {
	t.Helper()
	_, addr := startServer(t, Config{RequirePass: testPass})
	return addr
}

// checkCall asserts one generic call's outcome against cc.
func checkCall(t *testing.T, lib string, cc callCase, err error) {
	t.Helper()
	if cc.wantErr == "" {
		assert.NoErrorf(t, err, "%s: %q", lib, cc.args)
		return
	}
	if assert.Errorf(t, err, "%s: %q", lib, cc.args) {
		// rueidis drops the ERR prefix from the messages it returns
		assert.Equalf(t, strings.TrimPrefix(cc.wantErr, "ERR "), strings.TrimPrefix(err.Error(), "ERR "), "%s: %q", lib, cc.args)
	}
}

func anyArgs(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

func TestGoRedisEveryCommand(t *testing.T) {
	addr := startAuthServer(t)
	bothProtocols(t, func(t *testing.T, proto int) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Password: testPass, Protocol: proto})
		t.Cleanup(func() { _ = rdb.Close() })
		ctx := ctxT(t)
		for _, cc := range everyCommand() {
			err := rdb.Do(ctx, anyArgs(cc.args)...).Err()
			if err == redis.Nil {
				err = nil
			}
			checkCall(t, "go-redis", cc, err)
		}
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "RL.SLIDE", "tx", 2, 60)
			p.Do(ctx, "RL.SLIDE", "tx", 2, 60)
			p.Do(ctx, "RL.SLIDE", "tx", 2, 60)
			return nil
		})
		require.NoError(t, err)
		require.Len(t, cmds, 3)
		assert.Equal(t, []any{int64(0), int64(2), int64(0)}, cmds[2].(*redis.Cmd).Val().([]any)[:3], "the third of a limit of 2 is denied")
		assert.NoError(t, rdb.Do(ctx, "HELLO", proto).Err(), "HELLO with the protocol in use")
	})
}

func TestRueidisDefaultsEveryCommand(t *testing.T) {
	addr := startAuthServer(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: testPass})
	require.NoError(t, err, "rueidis connects with its defaults: HELLO 3 and CLIENT TRACKING ON OPTIN")
	t.Cleanup(c.Close)
	ctx := ctxT(t)
	for _, cc := range everyCommand() {
		if cc.args[0] == "UNSUBSCRIBE" {
			continue // rueidis refuses it outside its Receive API
		}
		err := c.Do(ctx, c.B().Arbitrary(cc.args...).Build()).Error()
		if rueidis.IsRedisNil(err) {
			err = nil
		}
		checkCall(t, "rueidis", cc, err)
	}
	res := c.DoMulti(ctx,
		c.B().Multi().Build(),
		c.B().Arbitrary("RL.SLIDE").Keys("tx").Args("2", "60").Build(),
		c.B().Arbitrary("RL.SLIDE").Keys("tx").Args("2", "60").Build(),
		c.B().Exec().Build())
	for _, r := range res {
		require.NoError(t, r.Error())
	}
	replies, err := res[3].ToArray()
	require.NoError(t, err)
	require.Len(t, replies, 2)
}

// TestRueidisClientSideCache caches RL.INFO with rueidis's DoCache, which
// sends CLIENT CACHING YES, MULTI, PTTL, the command and EXEC: a second read
// is a cache hit, and a change made by another client reaches rueidis as an
// invalidate push that evicts it.
func TestRueidisClientSideCache(t *testing.T) {
	addr := startAuthServer(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: testPass})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	other := redis.NewClient(&redis.Options{Addr: addr, Password: testPass})
	t.Cleanup(func() { _ = other.Close() })
	ctx := ctxT(t)
	require.NoError(t, other.Do(ctx, "RL.SLIDE", "cached", 10, 3600).Err())

	info := func() (int64, bool) {
		r := c.DoCache(ctx, rueidis.Cacheable(c.B().Arbitrary("RL.INFO").Keys("cached").Build()), time.Minute)
		m, err := r.AsMap()
		require.NoError(t, err)
		count := m["count"]
		n, err := count.AsInt64()
		require.NoError(t, err)
		return n, r.IsCacheHit()
	}
	n, hit := info()
	assert.Equal(t, int64(1), n)
	assert.False(t, hit)
	n, hit = info()
	assert.Equal(t, int64(1), n)
	assert.True(t, hit, "the second read comes from rueidis's cache")

	require.NoError(t, other.Do(ctx, "RL.SLIDE", "cached", 10, 3600).Err())
	require.Eventually(t, func() bool { n, hit = info(); return !hit }, deadline, time.Millisecond,
		"the change never invalidated rueidis's cache")
	assert.Equal(t, int64(2), n)
}

func TestRedigoEveryCommand(t *testing.T) {
	addr := startAuthServer(t)
	pool := &redigo.Pool{MaxIdle: 4, Dial: func() (redigo.Conn, error) {
		return redigo.Dial("tcp", addr, redigo.DialPassword(testPass))
	}}
	t.Cleanup(func() { _ = pool.Close() })
	ctx := ctxT(t)
	conn, err := pool.GetContext(ctx)
	require.NoError(t, err)
	defer conn.Close()
	for _, cc := range everyCommand() {
		_, err := conn.Do(cc.args[0], anyArgs(cc.args[1:])...)
		checkCall(t, "redigo", cc, err)
	}
	require.NoError(t, conn.Send("MULTI"))
	require.NoError(t, conn.Send("RL.SLIDE", "tx", 2, 60))
	require.NoError(t, conn.Send("RL.SLIDE", "tx", 2, 60))
	replies, err := redigo.Values(conn.Do("EXEC"))
	require.NoError(t, err)
	require.Len(t, replies, 2)
	hello, err := redigo.Values(conn.Do("HELLO", "2"))
	require.NoError(t, err)
	assert.Equal(t, []any{[]byte("server"), []byte("redis")}, hello[:2])
}
