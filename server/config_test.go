package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigGet(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{MaxClients: 77, RequirePass: "pw", MaxRequestBytes: 4096})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		require.NoError(t, c.Do(ctx, "AUTH", "pw").Err())

		assert.Equal(t, map[string]string{"maxclients": "77"}, c.ConfigGet(ctx, "maxclients").Val())
		assert.Equal(t, map[string]string{"maxclients": "77", "max-request-bytes": "4096", "max-key-bytes": "0"}, c.ConfigGet(ctx, "MAX[-C]*").Val())
		assert.Equal(t, map[string]string{"save": "", "appendonly": "no"},
			asStrings(t, c.Do(ctx, "CONFIG", "GET", "save", "appendonly").Val()), "as redis-benchmark asks")
		all := c.ConfigGet(ctx, "*").Val()
		assert.Equal(t, "(set)", all["requirepass"], "whether there is a password, never the password")
		assert.Equal(t, "127.0.0.1", all["bind"])
		assert.NotEqual(t, "0", all["port"], "the port actually chosen")
		assert.Empty(t, c.ConfigGet(ctx, "nosuch").Val())
	})
}

// asStrings reads a map reply of strings in either protocol.
func asStrings(t *testing.T, v any) map[string]string {
	m := map[string]string{}
	for k, e := range asMap(t, v) {
		m[k] = e.(string)
	}
	return m
}

func TestConfigGetIsAMapInRESP3(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, respCmd("HELLO", "3"))
	c.line(t)
	readFlat(t, c, 16)
	c.send(t, respCmd("CONFIG", "GET", "maxclients"))
	assert.Equal(t, "%1", c.line(t))
}

func TestConfigSet(t *testing.T) {
	_, addr := startServer(t, Config{MaxClients: 5})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	require.NoError(t, c.ConfigSet(ctx, "maxclients", "9").Err())
	assert.Equal(t, "9", c.ConfigGet(ctx, "maxclients").Val()["maxclients"])

	for _, tt := range []struct {
		args []any
		want string
	}{
		{[]any{"maxclients", "x"}, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
		{[]any{"maxclients", "0"}, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"},
		{[]any{"maxclients", "9223372036854775807"}, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"},
		{[]any{"requirepass", strings.Repeat("p", 500<<10)}, "ERR CONFIG SET failed (possibly related to argument 'requirepass') - requirepass must be at most 1024 bytes"},
		{[]any{"port", "1"}, "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config"},
		{[]any{"nosuch", "1"}, "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
		{[]any{"maxclients", "3", "requirepass"}, "ERR syntax error"},
		{[]any{"requirepass", "new", "maxclients", "x"}, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
	} {
		args := append([]any{"CONFIG", "SET"}, tt.args...)
		assert.EqualError(t, c.Do(ctx, args...).Err(), tt.want, "%v", tt.args)
	}
	assert.Equal(t, "", c.ConfigGet(ctx, "requirepass").Val()["requirepass"], "a refused CONFIG SET changes nothing")
}

// TestConfigSetRequirePass checks a new password binds new connections only.
func TestConfigSetRequirePass(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, respCmd("CONFIG", "SET", "requirepass", "s3"))
	require.Equal(t, "+OK", c.line(t))
	c.send(t, respCmd("PING"))
	assert.Equal(t, "+PONG", c.line(t), "a connection already in stays authenticated")

	n := dialRaw(t, addr)
	n.send(t, respCmd("PING"))
	assert.Equal(t, "-NOAUTH Authentication required.", n.line(t))
	n.send(t, respCmd("AUTH", "s3")+respCmd("PING"))
	assert.Equal(t, "+OK", n.line(t))
	assert.Equal(t, "+PONG", n.line(t))
}

func TestConfigHelp(t *testing.T) {
	_, addr := startServer(t, Config{})
	help, err := newClient(t, addr, 2).Do(ctxT(t), "CONFIG", "HELP").StringSlice()
	require.NoError(t, err)
	assert.Len(t, help, 3)
}

// TestConfigSetMaxClientsBeyondDescriptors refuses more clients than the
// process may open descriptors for, as Redis does.
func TestConfigSetMaxClientsBeyondDescriptors(t *testing.T) {
	limit, ok := proc.OpenFilesLimit()
	if !ok || limit >= maxMaxClients {
		t.Skip("skipped: no descriptor limit below maxclients' range here")
	}
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	err := c.ConfigSet(ctx, "maxclients", strconv.FormatUint(limit, 10)).Err()
	require.Error(t, err)
	assert.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able "+
		"to handle the specified number of clients, try with "+strconv.FormatUint(limit-reservedFDs, 10), err.Error())
	require.NoError(t, c.ConfigSet(ctx, "maxclients", strconv.FormatUint(limit-reservedFDs, 10)).Err())
}
