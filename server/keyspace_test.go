package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDelExists(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		wantDecision(t, c, "RL.SLIDE", "a", 5, 60)
		wantDecision(t, c, "RL.TOKEN", "b", 5, 1, "1s")
		assert.Equal(t, int64(3), wantInt(t, c, "EXISTS", "a", "a", "b", "nope"), "EXISTS counts repeats")
		assert.Equal(t, int64(1), wantInt(t, c, "DEL", "a", "a", "nope"), "DEL counts a key once")
		assert.Equal(t, int64(1), wantInt(t, c, "EXISTS", "a", "b"))
		assert.Equal(t, int64(1), wantInt(t, c, "del", "b"))
		assert.Equal(t, int64(0), wantInt(t, c, "DBSIZE"))
		assert.Equal(t, [5]int64{1, 5, 4, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "a", 5, 60), "a deleted key starts afresh")
		assert.Equal(t, [5]int64{1, 5, 4, 0, 1000}, wantDecision(t, c, "RL.TOKEN", "b", 5, 1, "1s"), "a deleted key starts afresh")
	})
}

func TestTypeTTL(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		wantDecision(t, c, "RL.SLIDE", "s", 10, 60)
		wantDecision(t, c, "RL.TOKEN", "t", 10, 1, "1s")
		wantReply(t, c, "slide", "TYPE", "s")
		wantReply(t, c, "token", "type", "t")
		wantReply(t, c, "none", "TYPE", "nope")
		steps := []struct {
			at                    time.Duration
			pttlS, ttlS, pttlT    int64
			existsS, existsT, all int64
		}{
			{0, 60000, 60, 1000, 1, 1, 2},
			{500 * time.Microsecond, 60000, 60, 1000, 1, 1, 2}, // 999.5 ms rounds up
			{999 * time.Millisecond, 59001, 59, 1, 1, 1, 2},
			{time.Second, 59000, 59, -2, 1, 0, 1}, // the bucket is full again: gone
			{59499 * time.Millisecond, 501, 1, -2, 1, 0, 1},
			{59501 * time.Millisecond, 499, 0, -2, 1, 0, 1}, // TTL rounds to nearest, as in Redis
			{60 * time.Second, -2, -2, -2, 0, 0, 0},
		}
		for _, st := range steps {
			clk.Set(st.at)
			at := fmt.Sprintf("at %v", st.at)
			assert.Equal(t, st.pttlS, wantInt(t, c, "PTTL", "s"), "PTTL s "+at)
			assert.Equal(t, st.ttlS, wantInt(t, c, "TTL", "s"), "TTL s "+at)
			assert.Equal(t, st.pttlT, wantInt(t, c, "pttl", "t"), "PTTL t "+at)
			assert.Equal(t, st.existsS, wantInt(t, c, "EXISTS", "s"), "EXISTS s "+at)
			assert.Equal(t, st.existsT, wantInt(t, c, "EXISTS", "t"), "EXISTS t "+at)
			assert.Len(t, keysOf(t, c, "*"), int(st.all), "KEYS * "+at)
		}
		wantReply(t, c, "none", "TYPE", "s")
		assert.Equal(t, int64(-2), wantInt(t, c, "TTL", "nope"))
		assert.Equal(t, int64(2), wantInt(t, c, "DBSIZE"), "DBSIZE counts expired keys until they are freed, as Redis does")
		assert.Equal(t, int64(0), wantInt(t, c, "DEL", "s", "t"), "DEL does not count expired keys")
		assert.Equal(t, int64(0), wantInt(t, c, "DBSIZE"), "DEL frees expired keys")
	})
}

func TestScanKeys(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		var users, all []string
		for i := range 100 {
			users = append(users, "user:"+strconv.Itoa(i))
			wantDecision(t, c, "RL.SLIDE", users[i], 5, 60)
		}
		all = append(all, users...)
		for i := range 20 {
			all = append(all, "tok:"+strconv.Itoa(i))
			wantDecision(t, c, "RL.TOKEN", "tok:"+strconv.Itoa(i), 5, 1, "1s")
		}
		assert.ElementsMatch(t, all, scanAll(t, c, "COUNT", 7))
		assert.ElementsMatch(t, all, scanAll(t, c))
		assert.ElementsMatch(t, users, scanAll(t, c, "MATCH", "user:*", "COUNT", 1000))
		assert.ElementsMatch(t, all[100:], scanAll(t, c, "TYPE", "token"))
		assert.ElementsMatch(t, all[100:], scanAll(t, c, "type", "TOKEN", "match", "*"))
		assert.ElementsMatch(t, []string{"user:1", "user:2"}, scanAll(t, c, "MATCH", "nothing*", "MATCH", "user:[1-2]"), "the last MATCH wins")
		assert.ElementsMatch(t, []string{"user:12"}, scanAll(t, c, "MATCH", "user:1[^0-13-9]"))
		assert.Len(t, scanAll(t, c, "MATCH", "user:?[2]"), 9)
		assert.Empty(t, scanAll(t, c, "TYPE", "string"))
		assert.ElementsMatch(t, users[10:20], keysOf(t, c, "user:1?"))
		assert.ElementsMatch(t, all, keysOf(t, c, "*"))
		assert.Empty(t, keysOf(t, c, "user"))
		v, err := c.Do(context.Background(), "SCAN", "0", "COUNT", 1000000).Slice()
		require.NoError(t, err)
		assert.Equal(t, "0", v[0], "one SCAN with a COUNT beyond the store's size visits it all")
		assert.Len(t, v[1], len(all))
		v, err = c.Do(context.Background(), "SCAN", "18446744073709551615", "COUNT", 1000).Slice()
		require.NoError(t, err)
		assert.Equal(t, []any{"0", []any{}}, v, "a cursor past the end ends the scan")
	})
}

// TestKeyspaceErrors covers SCAN's and the other keyspace commands' refusals.
func TestKeyspaceErrors(t *testing.T) {
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"SCAN", "abc"}, "ERR invalid cursor"},
		{[]any{"SCAN", "-1"}, "ERR invalid cursor"},
		{[]any{"SCAN", "0", "COUNT", 0}, "ERR syntax error"},
		{[]any{"SCAN", "0", "COUNT", -5}, "ERR syntax error"},
		{[]any{"SCAN", "0", "COUNT", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"SCAN", "0", "MATCH"}, "ERR syntax error"},
		{[]any{"SCAN", "0", "FOO", "bar"}, "ERR syntax error"},
		{[]any{"FLUSHALL", "NOW"}, "ERR syntax error"},
		{[]any{"FLUSHALL", "ASYNC", "SYNC"}, "ERR syntax error"},
		{[]any{"SCAN"}, "ERR wrong number of arguments for 'scan' command"},
		{[]any{"DEL"}, "ERR wrong number of arguments for 'del' command"},
		{[]any{"EXISTS"}, "ERR wrong number of arguments for 'exists' command"},
		{[]any{"TYPE"}, "ERR wrong number of arguments for 'type' command"},
		{[]any{"TYPE", "a", "b"}, "ERR wrong number of arguments for 'type' command"},
		{[]any{"PTTL"}, "ERR wrong number of arguments for 'pttl' command"},
		{[]any{"TTL", "a", "b"}, "ERR wrong number of arguments for 'ttl' command"},
		{[]any{"KEYS"}, "ERR wrong number of arguments for 'keys' command"},
		{[]any{"DBSIZE", "x"}, "ERR wrong number of arguments for 'dbsize' command"},
	}
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		for _, tc := range cases {
			wantErrReply(t, c, tc.want, tc.args...)
		}
	})
}

func TestFlushAll(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		_, c := startWithClock(t, proto)
		for _, args := range [][]any{{"FLUSHALL"}, {"FLUSHALL", "ASYNC"}, {"flushall", "sync"}} {
			wantDecision(t, c, "RL.SLIDE", "a", 1, 60)
			wantDecision(t, c, "RL.TOKEN", "b", 1, 1, "1s")
			assert.Equal(t, int64(2), wantInt(t, c, "DBSIZE"))
			wantReply(t, c, "OK", args...)
			assert.Equal(t, int64(0), wantInt(t, c, "DBSIZE"), "%v", args)
			assert.Equal(t, [5]int64{1, 1, 0, 0, 60000}, wantDecision(t, c, "RL.SLIDE", "a", 1, 60), "%v left state behind", args)
			wantReply(t, c, "OK", "FLUSHALL")
		}
	})
}

// scanAll iterates SCAN with opts to the end and returns every key it gave.
// A key may come twice (a shard rebuilt meanwhile); tests that compare sets dedupe.
func scanAll(t *testing.T, c *redis.Client, opts ...any) []string {
	t.Helper()
	var keys []string
	cursor := "0"
	for calls := 0; ; calls++ {
		require.Less(t, calls, 100000, "SCAN never returned cursor 0")
		v, err := c.Do(context.Background(), append([]any{"SCAN", cursor}, opts...)...).Slice()
		require.NoError(t, err)
		require.Len(t, v, 2)
		next, ok := v[0].(string)
		require.True(t, ok, "SCAN cursor is %T, want a bulk string", v[0])
		for _, k := range v[1].([]any) {
			keys = append(keys, k.(string))
		}
		if cursor = next; cursor == "0" {
			break
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func keysOf(t *testing.T, c *redis.Client, pattern string) []string {
	t.Helper()
	v, err := c.Do(context.Background(), "KEYS", pattern).StringSlice()
	require.NoError(t, err)
	return v
}

// wantReply sends args and checks that the reply is the string want.
func wantReply(t *testing.T, c *redis.Client, want string, args ...any) {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Text()
	require.NoErrorf(t, err, "%v", args)
	assert.Equalf(t, want, v, "%v", args)
}
