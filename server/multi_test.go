package server

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMultiExecWithGoRedis(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{Clock: newFakeClock(time.Unix(1700000000, 0)).Now})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		var echo *redis.StringCmd
		var slide *redis.Cmd
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			echo = p.Echo(ctx, "in tx")
			slide = p.Do(ctx, "RL.SLIDE", "k", "5", "60")
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, "in tx", echo.Val())
		assert.Equal(t, []any{int64(1), int64(5), int64(4), int64(0), int64(60000)}, slide.Val())
	})
}

func TestMultiExecDiscard(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	steps := []struct{ send, want string }{
		{respCmd("EXEC"), "-ERR EXEC without MULTI"},
		{respCmd("DISCARD"), "-ERR DISCARD without MULTI"},
		{respCmd("MULTI"), "+OK"},
		{respCmd("MULTI"), "-ERR MULTI calls can not be nested"},
		{respCmd("RL.SLIDE", "k", "5", "60"), "+QUEUED"},
		{respCmd("DISCARD"), "+OK"},
		{respCmd("MULTI"), "+OK"},
		{respCmd("PING"), "+QUEUED"},
		{respCmd("SELECT", "1"), "+QUEUED"},
		{respCmd("EXEC"), "*2"},
		{"", "+PONG"},
		{"", "-ERR DB index is out of range"}, // an error at EXEC time is one reply; the rest run
		{respCmd("PING"), "+PONG"},
	}
	for _, st := range steps {
		if st.send != "" {
			c.send(t, st.send)
		}
		assert.Equal(t, st.want, c.line(t), "after %q", st.send)
	}
	assert.Zero(t, s.cfg.Store.Len(), "DISCARD dropped the queued RL.SLIDE")
}

// TestExecAbort checks that a command refused while queueing dooms the
// transaction, as in Redis, and that nothing queued runs.
func TestExecAbort(t *testing.T) {
	tests := []struct {
		name, bad, reply string
	}{
		{"unknown command", respCmd("NOSUCH", "a"), "-ERR unknown command 'NOSUCH', with args beginning with: 'a' "},
		{"wrong arity", respCmd("ECHO"), "-ERR wrong number of arguments for 'echo' command"},
		{"not allowed in MULTI", respCmd("SHUTDOWN"), "-ERR Command not allowed inside a transaction"},
		{"not allowed in MULTI", respCmd("SAVE"), "-ERR Command not allowed inside a transaction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, addr := startServer(t, Config{})
			c := dialRaw(t, addr)
			c.send(t, respCmd("MULTI")+respCmd("RL.SLIDE", "k", "5", "60")+tt.bad+respCmd("PING")+respCmd("EXEC")+respCmd("PING"))
			for _, want := range []string{"+OK", "+QUEUED", tt.reply, "+QUEUED",
				"-EXECABORT Transaction discarded because of previous errors.", "+PONG"} {
				assert.Equal(t, want, c.line(t))
			}
			assert.Zero(t, s.cfg.Store.Len(), "nothing queued ran")
		})
	}
}

func TestMultiQueueIsCapped(t *testing.T) {
	_, addr := startServer(t, Config{MaxRequestBytes: 2048})
	c := dialRaw(t, addr)
	c.send(t, respCmd("MULTI"))
	require.Equal(t, "+OK", c.line(t))
	arg := strings.Repeat("x", 1000)
	c.send(t, respCmd("ECHO", arg)+respCmd("ECHO", arg)+respCmd("ECHO", arg)+respCmd("EXEC"))
	assert.Equal(t, "+QUEUED", c.line(t))
	assert.Equal(t, "+QUEUED", c.line(t))
	assert.Equal(t, "-ERR MULTI queue is larger than max-request-bytes", c.line(t))
	assert.Equal(t, "-EXECABORT Transaction discarded because of previous errors.", c.line(t))
}

func TestMultiNoAuth(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "pw"})
	c := dialRaw(t, addr)
	c.send(t, respCmd("MULTI"))
	assert.Equal(t, "-NOAUTH Authentication required.", c.line(t))
	c.send(t, respCmd("EXEC"))
	assert.Equal(t, "-NOAUTH Authentication required.", c.line(t))
}

// Empty arguments cost the server their framing and a slice header each, so
// they count against the queue's cap: otherwise a client could queue without
// limit with commands of thousands of empty arguments.
func TestMultiQueueCountsEmptyArgs(t *testing.T) {
	_, addr := startServer(t, Config{MaxRequestBytes: 2048})
	c := dialRaw(t, addr)
	c.send(t, respCmd("MULTI"))
	require.Equal(t, "+OK", c.line(t))
	args := append([]string{"DEL"}, make([]string, 300)...) // about 1.8 KB on the wire
	c.send(t, respCmd(args...)+respCmd(args...)+respCmd("DISCARD"))
	assert.Equal(t, "+QUEUED", c.line(t))
	assert.Equal(t, "-ERR MULTI queue is larger than max-request-bytes", c.line(t))
	assert.Equal(t, "+OK", c.line(t))
}
