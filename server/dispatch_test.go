package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandNamesIgnoreCase(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	for _, name := range []string{"PING", "ping", "PiNg"} {
		c.send(t, respCmd(name))
		assert.Equal(t, "+PONG", c.line(t), name)
	}
}

func TestUnknownCommandIsWordedAsRedis7(t *testing.T) {
	_, addr := startServer(t, Config{})
	long := strings.Repeat("x", 200)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"foo", "a", "b"}, "-ERR unknown command 'foo', with args beginning with: 'a' 'b' "},
		{[]string{"FOO"}, "-ERR unknown command 'FOO', with args beginning with: "},
		{[]string{"foo", "a\r\nb"}, "-ERR unknown command 'foo', with args beginning with: 'a  b' "},
		{[]string{"foo", long, "c"}, "-ERR unknown command 'foo', with args beginning with: '" + long[:128] + "' "},
		{[]string{strings.Repeat("n", 40)}, "-ERR unknown command '" + strings.Repeat("n", 40) + "', with args beginning with: "},
	}
	c := dialRaw(t, addr)
	for _, tt := range tests {
		c.send(t, respCmd(tt.args...))
		assert.Equal(t, tt.want, c.line(t))
	}
}

func TestArityErrorsAreWordedAsRedis7(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		tests := []struct {
			args []any
			want string
		}{
			{[]any{"echo"}, "ERR wrong number of arguments for 'echo' command"},
			{[]any{"ECHO", "a", "b"}, "ERR wrong number of arguments for 'echo' command"},
			{[]any{"ping", "a", "b"}, "ERR wrong number of arguments for 'ping' command"},
			{[]any{"rl.slide", "k"}, "ERR wrong number of arguments for 'rl.slide' command"},
			{[]any{"client"}, "ERR wrong number of arguments for 'client' command"},
			{[]any{"client", "setname"}, "ERR wrong number of arguments for 'client|setname' command"},
			{[]any{"CONFIG", "GET"}, "ERR wrong number of arguments for 'config|get' command"},
			{[]any{"client", "nosuch"}, "ERR unknown subcommand 'nosuch'. Try CLIENT HELP."},
			{[]any{"config", "NOSUCH"}, "ERR unknown subcommand 'NOSUCH'. Try CONFIG HELP."},
		}
		for _, tt := range tests {
			err := c.Do(ctx, tt.args...).Err()
			require.Error(t, err, "%v", tt.args)
			assert.Equal(t, tt.want, err.Error(), "%v", tt.args)
		}
	})
}

// TestPanicIsRecoveredPerCommand registers a command that panics: its client
// gets an error and is disconnected, and everyone else is served on.
func TestPanicIsRecoveredPerCommand(t *testing.T) {
	boom := command{name: "test.panic", arity: 1, run: func(s *Server, c *client, args [][]byte) {
		c.conn.WriteArray(2) // half a reply, which is why the connection must close
		panic("boom")
	}}
	_, addr := startServerCmds(t, Config{}, boom)
	other := dialRaw(t, addr)
	other.send(t, respCmd("PING"))
	require.Equal(t, "+PONG", other.line(t))

	c := dialRaw(t, addr)
	c.send(t, respCmd("TEST.PANIC")+respCmd("PING"))
	assert.Equal(t, "*2", c.line(t))
	assert.Equal(t, "-ERR internal error running 'TEST.PANIC', closing the connection; see the server log", c.line(t))
	assert.True(t, c.closedByServer(t), "the panicking client's connection is closed")

	other.send(t, respCmd("ECHO", "still here"))
	assert.Equal(t, "$10", other.line(t))
	assert.Equal(t, "still here", other.line(t))
	require.NoError(t, newClient(t, addr, 3).Ping(ctxT(t)).Err(), "new clients are served")
}

func TestPipelineOf10000Commands(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		const n = 10000
		cmds, err := c.Pipelined(ctxT(t), func(p redis.Pipeliner) error {
			for i := range n {
				if i%2 == 0 {
					p.Echo(ctxT(t), strconv.Itoa(i))
				} else {
					p.Ping(ctxT(t))
				}
			}
			return nil
		})
		require.NoError(t, err)
		require.Len(t, cmds, n)
		for i, cmd := range cmds {
			if i%2 == 0 {
				assert.Equal(t, strconv.Itoa(i), cmd.(*redis.StringCmd).Val())
			} else {
				assert.Equal(t, "PONG", cmd.(*redis.StatusCmd).Val())
			}
		}
	})
}

func TestFindCommandDoesNotAllocate(t *testing.T) {
	s, _ := startServer(t, Config{})
	name := []byte("Rl.SlIdE")
	allocs := testing.AllocsPerRun(100, func() {
		if s.table.Find(name) == nil {
			t.Fatal("rl.slide not found")
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkDispatchLookup(b *testing.B) {
	s, err := New(Config{Store: mustStore(b)})
	require.NoError(b, err)
	name := []byte("RL.SLIDE")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = s.table.Find(name)
		}
	})
}
