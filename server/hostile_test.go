package server

import (
	"io"
	"math/rand/v2"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadFramingIsRefusedAndClosed sends each hostile input (docs/commands.md, Bad input and limits) on
// its own connection: the server answers the requests before it, replies
// with a protocol error, closes, and serves a new connection after.
func TestBadFramingIsRefusedAndClosed(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"an oversized bulk header", "*1\r\n$999999999999\r\n", "-ERR Protocol error: invalid bulk length"},
		{"a bulk header past int64", "*1\r\n$99999999999999999999999\r\n", "-ERR Protocol error: invalid bulk length"},
		{"an oversized array header", "*999999999999\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"a request over the cap", "*3\r\n$4\r\nECHO\r\n$1000\r\n", "-ERR Protocol error: request is larger than max-request-bytes"},
		{"a bulk that is not one", "*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'"},
		{"a bulk longer than it said", "*1\r\n$4\r\nPINGPONG\r\n", "-ERR Protocol error: invalid bulk length"},
		{"an inline line that never ends", strings.Repeat("A", wire.MaxInline+1), "-ERR Protocol error: too big inline request"},
		{"binary after a star", "*\xff\xfe\x00\r\n", "-ERR Protocol error: invalid multibulk length"},
	}
	_, addr := startServer(t, Config{MaxRequestBytes: 1024})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			c.send(t, respCmd("ECHO", "before")+tt.in)
			assert.Equal(t, "$6", c.line(t))
			assert.Equal(t, "before", c.line(t), "requests before the bad one are answered")
			assert.Equal(t, tt.want, c.line(t))
			assert.True(t, c.closedByServer(t))
			assertServing(t, addr)
		})
	}
}

// assertServing checks a new connection gets PONG.
func assertServing(t *testing.T, addr string) {
	t.Helper()
	c := dialRaw(t, addr)
	c.send(t, respCmd("PING"))
	assert.Equal(t, "+PONG", c.line(t), "the server still serves")
}

// TestUnbalancedQuotes is the protocol error of an inline line's quoting.
func TestUnbalancedQuotes(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, "ECHO \"abc\r\n")
	assert.Equal(t, "-ERR Protocol error: unbalanced quotes in request", c.line(t))
	assert.True(t, c.closedByServer(t))
	assertServing(t, addr)
}

func TestInlineCommands(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, "PING\r\n\r\necho 'a b'\nECHO \"x\\ty\"\r\n")
	assert.Equal(t, "+PONG", c.line(t))
	assert.Equal(t, "$3", c.line(t))
	assert.Equal(t, "a b", c.line(t))
	assert.Equal(t, "$3", c.line(t))
	assert.Equal(t, "x\ty", c.line(t))
}

// TestBinaryGarbage sends random bytes. Whatever the server makes of them,
// it must survive, and answer on other connections meanwhile.
func TestBinaryGarbage(t *testing.T) {
	_, addr := startServer(t, Config{MaxRequestBytes: 64 << 10})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		junk := make([]byte, 1+r.IntN(8<<10))
		for j := range junk {
			junk[j] = byte(r.Uint32())
		}
		if i%2 == 0 {
			junk[0] = '*' // RESP framing, then garbage
		}
		c := dialRaw(t, addr)
		_, _ = c.Write(junk) // the server may close before it has read all
		_ = c.Conn.(interface{ CloseWrite() error }).CloseWrite()
		_, _ = io.Copy(io.Discard, c.r) // until the server closes
		assertServing(t, addr)
	}
}

func TestRequestCapAllowsUpToIt(t *testing.T) {
	_, addr := startServer(t, Config{MaxRequestBytes: 2048})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	fits := strings.Repeat("x", 2025) // 19 bytes of framing and "2025": 2048 in all
	require.Len(t, respCmd("ECHO", fits), 2048)
	assert.Equal(t, fits, c.Echo(ctx, fits).Val())
	assert.ErrorContains(t, c.Echo(ctx, strings.Repeat("x", 4096)).Err(), "Protocol error: invalid bulk length")
}

// TestTrickled1GiBIsCutOffAtTheCap trickles a 1 GiB request in 64 KiB
// chunks, as one bulk string and as many. The server must cut it off at the
// cap (the first at its header, the second once its bulk strings would pass
// it), and all it allocates meanwhile, which bounds how far its heap can
// grow, must stay near the cap, however much the client sends.
func TestTrickled1GiBIsCutOffAtTheCap(t *testing.T) {
	const maxReq = 4 << 20
	const total = 1 << 30
	const chunk = 64 << 10
	tests := []struct {
		name, header string
		next         func(sent int) string // framing to send before the chunk at sent bytes
		want         string
	}{
		{"one bulk string", "*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(total) + "\r\n",
			func(int) string { return "" }, "-ERR Protocol error: invalid bulk length"},
		{"many bulk strings", "*" + strconv.Itoa(total/chunk+1) + "\r\n$4\r\nECHO\r\n",
			func(int) string { return "$" + strconv.Itoa(chunk) + "\r\n" }, "-ERR Protocol error: request is larger than max-request-bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, addr := startServer(t, Config{MaxRequestBytes: maxReq})
			c := dialRaw(t, addr)
			replied := make(chan string, 1)
			go func() { l, _ := c.r.ReadString('\n'); replied <- strings.TrimSuffix(l, "\r\n") }()

			before := allocatedBytes()
			sent := trickle(c, tt.header, tt.next, total, chunk, replied)
			grew := allocatedBytes() - before

			assert.Equal(t, tt.want, <-replied)
			assert.True(t, c.closedByServer(t))
			assert.Less(t, sent, 256<<20, "the client was cut off long before 1 GiB")
			assert.Less(t, grew, uint64(8*maxReq+32<<20), "bytes allocated while %d were sent", sent)
			t.Logf("sent %d MiB before the cut-off; the process allocated %d MiB meanwhile", sent>>20, grew>>20)
			assertServing(t, addr)
		})
	}
}

// trickle sends header, then up to total bytes in chunks, each preceded by
// next's framing (and followed by CRLF when there is framing), until a write
// fails, which is how a client learns it was cut off, or the server has
// replied. It returns the bytes sent. It allocates only a little framing.
func trickle(c *rawConn, header string, next func(int) string, total, chunk int, replied chan string) int {
	data := make([]byte, chunk)
	sent, err := c.Write([]byte(header))
	for err == nil && sent < total && len(replied) == 0 {
		frame := next(sent)
		_, err = c.Write([]byte(frame))
		var n int
		if err == nil {
			n, err = c.Write(data)
		}
		if err == nil && frame != "" {
			_, err = c.Write([]byte("\r\n"))
		}
		sent += len(frame) + n
	}
	return sent
}

// allocatedBytes is the process's cumulative heap allocation. Its growth over
// a stretch bounds how far the heap can have grown in it.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
