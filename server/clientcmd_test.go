package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClientIDNameAndInfo(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		id, err := c.ClientID(ctx).Result()
		require.NoError(t, err)
		assert.Positive(t, id)

		name, err := c.Do(ctx, "CLIENT", "GETNAME").Result()
		assert.Nil(t, name, "no name yet is a null")
		assert.EqualError(t, err, "redis: nil")
		require.NoError(t, c.Do(ctx, "CLIENT", "SETNAME", "api-7").Err())
		assert.Equal(t, "api-7", c.ClientGetName(ctx).Val())
		assert.EqualError(t, c.Do(ctx, "CLIENT", "SETNAME", "a b").Err(),
			"ERR Client names cannot contain spaces, newlines or special characters.")

		info := c.Do(ctx, "CLIENT", "INFO").Val().(string)
		assert.Contains(t, info, "id="+strconv.FormatInt(id, 10)+" ")
		assert.Contains(t, info, " name=api-7 ")
		assert.Contains(t, info, " cmd=client|info ")
		assert.Contains(t, info, " resp="+strconv.Itoa(proto))
	})
}

func TestClientSetInfo(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", "mylib").Err())
	require.NoError(t, c.Do(ctx, "CLIENT", "SETINFO", "lib-ver", "1.0").Err())
	info := c.Do(ctx, "CLIENT", "INFO").Val().(string)
	assert.Contains(t, info, " lib-name=mylib lib-ver=1.0")
	assert.EqualError(t, c.Do(ctx, "CLIENT", "SETINFO", "color", "red").Err(), "ERR Unrecognized option 'color'")
	assert.EqualError(t, c.Do(ctx, "CLIENT", "SETINFO", "lib-name", "a b").Err(),
		"ERR lib-name cannot contain spaces, newlines or special characters.")
}

func TestClientList(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := ctxT(t)
	a, b := newClient(t, addr, 3), newClient(t, addr, 2)
	require.NoError(t, a.Do(ctx, "CLIENT", "SETNAME", "a").Err())
	require.NoError(t, b.Do(ctx, "CLIENT", "SETNAME", "b").Err())
	list := a.ClientList(ctx).Val()
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], " name=a ")
	assert.Contains(t, lines[1], " name=b ")
	for _, f := range []string{"addr=127.0.0.1:", "laddr=", "age=", "idle=", "flags=N", "db=0", "user=default"} {
		assert.Contains(t, lines[0], f)
	}

	idB := b.ClientID(ctx).Val()
	only := a.Do(ctx, "CLIENT", "LIST", "ID", idB).Val().(string)
	assert.Contains(t, only, " name=b ")
	assert.NotContains(t, only, " name=a ")
	assert.Regexp(t, `(?s) name=a .* name=b `, a.Do(ctx, "CLIENT", "LIST", "TYPE", "normal").Val())
	assert.EqualError(t, a.Do(ctx, "CLIENT", "LIST", "ID", "x").Err(), "ERR Invalid client ID")
	assert.EqualError(t, a.Do(ctx, "CLIENT", "LIST", "FOO").Err(), "ERR syntax error")
}

// TestClientListShowsMulti checks another client sees a client inside MULTI.
func TestClientListShowsMulti(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, respCmd("CLIENT", "SETNAME", "tx")+respCmd("MULTI")+respCmd("PING"))
	for _, want := range []string{"+OK", "+OK", "+QUEUED"} {
		require.Equal(t, want, c.line(t))
	}
	list := newClient(t, addr, 3).ClientList(ctxT(t)).Val()
	assert.Regexp(t, ` name=tx .* flags=x .* multi=1 `, list)
	c.send(t, respCmd("EXEC"))
	assert.Equal(t, "*1", c.line(t))
	assert.Equal(t, "+PONG", c.line(t))
	list = newClient(t, addr, 3).ClientList(ctxT(t)).Val()
	assert.Regexp(t, ` name=tx .* flags=N .* multi=-1 `, list)
}

func TestClientKill(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := ctxT(t)
	admin := newClient(t, addr, 3)
	require.NoError(t, admin.Ping(ctx).Err())

	victim := dialRaw(t, addr)
	victim.send(t, respCmd("CLIENT", "ID"))
	id := strings.TrimPrefix(victim.line(t), ":")
	assert.EqualValues(t, 1, admin.Do(ctx, "CLIENT", "KILL", "ID", id).Val())
	assert.True(t, victim.closedByServer(t), "killed by ID")

	victim = dialRaw(t, addr)
	victim.send(t, respCmd("PING"))
	require.Equal(t, "+PONG", victim.line(t))
	assert.Equal(t, "OK", admin.Do(ctx, "CLIENT", "KILL", victim.LocalAddr().String()).Val())
	assert.True(t, victim.closedByServer(t), "killed by address, the old form")

	assert.EqualError(t, admin.Do(ctx, "CLIENT", "KILL", "1.2.3.4:5").Err(), "ERR No such client")
	assert.EqualValues(t, 0, admin.Do(ctx, "CLIENT", "KILL", "ID", "999999").Val())
	assert.EqualError(t, admin.Do(ctx, "CLIENT", "KILL", "ID", "abc").Err(), "ERR client-id should be greater than 0")
	assert.EqualError(t, admin.Do(ctx, "CLIENT", "KILL", "FOO", "bar").Err(), "ERR syntax error")
	assert.EqualValues(t, 0, admin.Do(ctx, "CLIENT", "KILL", "USER", "default").Val(), "SKIPME yes by default spares the caller")
}

func TestClientKillSelf(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, respCmd("CLIENT", "KILL", "USER", "default", "SKIPME", "no")+respCmd("PING"))
	assert.Equal(t, ":1", c.line(t), "the reply goes out before the close")
	assert.True(t, c.closedByServer(t))
}

func TestClientHelp(t *testing.T) {
	_, addr := startServer(t, Config{})
	help, err := newClient(t, addr, 3).Do(ctxT(t), "CLIENT", "HELP").StringSlice()
	require.NoError(t, err)
	assert.Contains(t, help, "KILL: Closes connections")
}
