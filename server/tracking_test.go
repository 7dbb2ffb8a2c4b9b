package server

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hello3 switches a raw connection to RESP3 and reads HELLO's map away.
func hello3(t *testing.T, c *rawConn) {
	t.Helper()
	c.send(t, resp("HELLO", "3"))
	h := c.line(t)
	require.Equal(t, "%8", h)
	for range 16 {
		readFrame(t, c)
	}
}

// readFrame reads one RESP2 or RESP3 frame and returns it flattened as text,
// aggregates as [a b c], pushes as >[a b c], nulls as nil.
func readFrame(t *testing.T, c *rawConn) string {
	t.Helper()
	h := c.line(t)
	switch h[0] {
	case '+', '-', ':':
		return h[1:]
	case '_':
		return "nil"
	case '$':
		if h == "$-1" {
			return "nil"
		}
		return c.bulkAfter(t, h)
	case '*', '>', '%':
		n := 0
		for _, d := range h[1:] {
			n = n*10 + int(d-'0')
		}
		if h[0] == '%' {
			n *= 2
		}
		out := ""
		if h[0] == '>' {
			out = ">"
		}
		out += "["
		for i := range n {
			if i > 0 {
				out += " "
			}
			out += readFrame(t, c)
		}
		return out + "]"
	}
	t.Fatalf("unexpected frame %q", h)
	return ""
}

// bulkAfter reads the body of a bulk string whose header h was read.
func (c *rawConn) bulkAfter(t *testing.T, h string) string {
	t.Helper()
	n := 0
	for _, d := range h[1:] {
		n = n*10 + int(d-'0')
	}
	buf := make([]byte, n+2)
	_, err := io.ReadFull(c.r, buf)
	require.NoError(t, err)
	return string(buf[:n])
}

// call sends args and returns the next frame.
func (c *rawConn) call(t *testing.T, args ...string) string {
	t.Helper()
	c.send(t, resp(args...))
	return readFrame(t, c)
}

func TestTrackingInvalidatesAReadKeyOnChange(t *testing.T) {
	_, addr := startServer(t, Config{})
	reader, writer := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, reader)
	require.Equal(t, "OK", reader.call(t, "CLIENT", "TRACKING", "ON"))
	require.Equal(t, "0", reader.call(t, "EXISTS", "k"))
	require.Contains(t, writer.call(t, "RL.SLIDE", "k", "10", "60"), "[1 10 9 0 ")
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))

	// One-shot: the key is tracked again only once it is read again.
	writer.call(t, "RL.SLIDE", "k", "10", "60")
	require.Equal(t, "slide", reader.call(t, "TYPE", "k"))
	writer.call(t, "DEL", "k")
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))
	require.Equal(t, "PONG", reader.call(t, "PING"), "no second invalidation was queued")
}
