package server

import (
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/stretchr/testify/assert"
)

// TestCapsBeforeAuth checks Redis's caps on a client that has not
// authenticated: more than 10 arguments, or a bulk string over 16 KiB, is a
// protocol error that closes the connection; after AUTH both are allowed.
func TestCapsBeforeAuth(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "secret"})
	eleven := strings.Fields("ECHO a b c d e f g h i j")
	tests := []struct{ name, req, want string }{
		{"eleven arguments", respCmd(eleven...), "-ERR Protocol error: unauthenticated multibulk length"},
		{"a 500 KB password", respCmd("AUTH", strings.Repeat("p", 500<<10)), "-ERR Protocol error: unauthenticated bulk length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			c.send(t, respCmd("PING")+tt.req)
			assert.Equal(t, "-NOAUTH Authentication required.", c.line(t))
			assert.Equal(t, tt.want, c.line(t))
			assert.True(t, c.closedByServer(t))
		})
	}
	c := dialRaw(t, addr)
	c.send(t, respCmd("AUTH", "secret")+respCmd(eleven...)+respCmd("ECHO", strings.Repeat("x", 20<<10)))
	assert.Equal(t, "+OK", c.line(t))
	assert.Equal(t, "-ERR wrong number of arguments for 'echo' command", c.line(t), "eleven arguments are parsed once authenticated")
	assert.Equal(t, strings.Repeat("x", 20<<10), c.bulk(t), "a 20 KiB argument is allowed once authenticated")
}

// TestRepeatedWrongPasswordsClose checks a connection is closed after
// auth.MaxAuthFailures wrong passwords, and nothing pipelined after them runs.
func TestRepeatedWrongPasswordsClose(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "secret"})
	c := dialRaw(t, addr)
	var req string
	for range auth.MaxAuthFailures + 100 {
		req += respCmd("AUTH", "guess")
	}
	c.send(t, req+respCmd("AUTH", "secret"))
	for range auth.MaxAuthFailures {
		assert.Equal(t, "-"+auth.ErrWrongPass, c.line(t))
	}
	assert.True(t, c.closedByServer(t), "closed after %d wrong passwords", auth.MaxAuthFailures)

	c = dialRaw(t, addr)
	c.send(t, respCmd("HELLO", "3", "AUTH", "default", "guess")+respCmd("AUTH", "secret")+respCmd("PING"))
	assert.Equal(t, "-"+auth.ErrWrongPass, c.line(t))
	assert.Equal(t, "+OK", c.line(t), "fewer failures than the cap leave the connection open")
	assert.Equal(t, "+PONG", c.line(t))
}
