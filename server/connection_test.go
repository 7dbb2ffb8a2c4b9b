package server

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPingEchoSelect(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		assert.Equal(t, "PONG", c.Ping(ctx).Val())
		assert.Equal(t, "hi", c.Do(ctx, "PING", "hi").Val())
		assert.Equal(t, "a\r\nb\x00", c.Echo(ctx, "a\r\nb\x00").Val())
		assert.Equal(t, "OK", c.Do(ctx, "SELECT", "0").Val())
		assert.EqualError(t, c.Do(ctx, "SELECT", "1").Err(), "ERR DB index is out of range")
		assert.EqualError(t, c.Do(ctx, "SELECT", "x").Err(), "ERR value is not an integer or out of range")
	})
}

// TestQuitDropsTheRestOfThePipeline checks QUIT replies, closes, and runs nothing sent after it.
func TestQuitDropsTheRestOfThePipeline(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, respCmd("PING")+respCmd("QUIT")+respCmd("RL.SLIDE", "k", "10", "60"))
	assert.Equal(t, "+PONG", c.line(t))
	assert.Equal(t, "+OK", c.line(t))
	assert.True(t, c.closedByServer(t))
	assert.Zero(t, s.cfg.Store.Len(), "the command after QUIT did not run")
}

func TestHelloRepliesWithAMapInTheProtocolChosen(t *testing.T) {
	_, addr := startServer(t, Config{Version: "1.2.3"})
	c := dialRaw(t, addr)
	c.send(t, respCmd("HELLO", "3"))
	assert.Equal(t, "%8", c.line(t), "HELLO 3 answers with a RESP3 map")
	got := readFlat(t, c, 16)
	assert.Equal(t, "redis", got["server"])
	assert.Equal(t, auth.RedisVersion, got["version"])
	assert.Equal(t, ":3", got["proto"])
	assert.Equal(t, "standalone", got["mode"])
	assert.Equal(t, "master", got["role"])
	assert.Equal(t, "*0", got["modules"])
	assert.Equal(t, "1.2.3", got["rlstore_version"])

	c.send(t, respCmd("HELLO", "2"))
	assert.Equal(t, "*16", c.line(t), "HELLO 2 answers with a flat array")
	assert.Equal(t, ":2", readFlat(t, c, 16)["proto"])
}

// readFlat reads n scalar replies, alternating key and value, into a map. A
// bulk string's value is its text; any other reply is its line as sent.
func readFlat(t *testing.T, c *rawConn, n int) map[string]string {
	t.Helper()
	m := map[string]string{}
	var key string
	for i := range n {
		v := c.line(t)
		if v[0] == '$' {
			v = c.line(t)
		}
		if i%2 == 0 {
			key = v
		} else {
			m[key] = v
		}
	}
	return m
}

func TestGoRedisConnectsInBothProtocols(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		hello, err := c.Do(ctx, "HELLO", proto).Result()
		require.NoError(t, err)
		m := asMap(t, hello)
		assert.EqualValues(t, proto, m["proto"])
		assert.Equal(t, "redis", m["server"])
		assert.Contains(t, c.ClientList(ctx).Val(), "lib-name=go-redis", "go-redis's CLIENT SETINFO was taken")
		assert.Contains(t, c.ClientList(ctx).Val(), "resp="+string(rune('0'+proto)))
	})
}

// asMap reads a map reply as go-redis returns it: a map in RESP3, a flat list in RESP2.
func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	m := map[string]any{}
	switch v := v.(type) {
	case map[any]any:
		for k, e := range v {
			m[k.(string)] = e
		}
	case []any:
		require.Zero(t, len(v)%2, "a flat map has pairs")
		for i := 0; i < len(v); i += 2 {
			m[v[i].(string)] = v[i+1]
		}
	default:
		t.Fatalf("not a map reply: %T %v", v, v)
	}
	return m
}

func TestHelloErrors(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	for _, tt := range []struct {
		args []any
		want string
	}{
		{[]any{"HELLO", "4"}, "NOPROTO unsupported protocol version"},
		{[]any{"HELLO", "x"}, "ERR Protocol version is not an integer or out of range"},
		{[]any{"HELLO", "3", "foo"}, "ERR Syntax error in HELLO option 'foo'"},
		{[]any{"HELLO", "3", "SETNAME"}, "ERR Syntax error in HELLO option 'SETNAME'"},
		{[]any{"HELLO", "3", "SETNAME", "a b"}, "ERR Client names cannot contain spaces, newlines or special characters."},
	} {
		assert.EqualError(t, c.Do(ctx, tt.args...).Err(), tt.want, "%v", tt.args)
	}
	require.NoError(t, c.Do(ctx, "HELLO", "3", "SETNAME", "worker-1").Err())
	assert.Equal(t, "worker-1", c.ClientGetName(ctx).Val())
}

func TestAuth(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "sekret"})
	c := dialRaw(t, addr)
	steps := []struct{ send, want string }{
		{respCmd("PING"), "-NOAUTH Authentication required."},
		{respCmd("RL.SLIDE", "k", "1", "1"), "-NOAUTH Authentication required."},
		{respCmd("NOSUCH"), "-ERR unknown command 'NOSUCH', with args beginning with: "},
		{respCmd("ECHO"), "-ERR wrong number of arguments for 'echo' command"},
		{respCmd("HELLO", "3"), "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{respCmd("AUTH", "wrong"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{respCmd("AUTH", "bob", "sekret"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{respCmd("HELLO", "2", "AUTH", "default", "wrong"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{respCmd("AUTH", "a", "b", "c"), "-ERR syntax error"},
		{respCmd("AUTH", "sekret"), "+OK"},
		{respCmd("PING"), "+PONG"},
		{respCmd("AUTH", "wrong"), "-WRONGPASS invalid username-password pair or user is disabled."},
		{respCmd("PING"), "+PONG"}, // a failed AUTH does not undo an earlier one
	}
	for _, st := range steps {
		c.send(t, st.send)
		assert.Equal(t, st.want, c.line(t), "after %q", st.send)
	}

	q := dialRaw(t, addr)
	q.send(t, respCmd("QUIT"))
	assert.Equal(t, "+OK", q.line(t), "QUIT needs no AUTH")
}

func TestAuthWithoutAPassword(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	assert.EqualError(t, c.Do(ctx, "AUTH", "x").Err(),
		"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	assert.NoError(t, c.Do(ctx, "AUTH", "default", "anything").Err(), "the default user needs no password")
	assert.EqualError(t, c.Do(ctx, "AUTH", "bob", "x").Err(), "WRONGPASS invalid username-password pair or user is disabled.")
}

// TestGoRedisAuthenticates connects with a password: go-redis sends it in
// HELLO for RESP3, and in HELLO 2 for RESP2.
func TestGoRedisAuthenticates(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{RequirePass: "sekret"})
		ctx := ctxT(t)
		good := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, Password: "sekret", MaxRetries: -1})
		t.Cleanup(func() { _ = good.Close() })
		assert.NoError(t, good.Ping(ctx).Err())
		bad := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, Password: "wrong", MaxRetries: -1})
		t.Cleanup(func() { _ = bad.Close() })
		assert.ErrorContains(t, bad.Ping(ctx).Err(), "WRONGPASS")
		none := newClient(t, addr, proto)
		assert.ErrorContains(t, none.Ping(ctx).Err(), "NOAUTH")
	})
}
