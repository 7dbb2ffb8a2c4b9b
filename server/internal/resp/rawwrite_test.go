//go:build unix

package resp

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	return server, client
}

// TestRawWriterWritesAll checks that a write larger than the socket takes
// at once goes out whole and in order: it waits for room as the client
// reads, rather than returning short.
func TestRawWriterWritesAll(t *testing.T) {
	server, client := tcpPair(t)
	w := NewRawWriter(server)
	require.NotNil(t, w, "a TCP connection has a socket of its own")
	big := make([]byte, 16<<20) // past any loopback socket buffer
	for i := range big {
		big[i] = byte(i * 7)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(big))))
		got <- b
	}()
	require.NoError(t, w.Write(big))
	assert.True(t, bytes.Equal(big, <-got), "every byte, in order")
}

// TestRawWriterReportsErrors checks that a write to a connection the peer
// reset, or that was closed, fails rather than reporting success.
func TestRawWriterReportsErrors(t *testing.T) {
	server, client := tcpPair(t)
	w := NewRawWriter(server)
	require.NoError(t, client.(*net.TCPConn).SetLinger(0)) // close with a reset
	require.NoError(t, client.Close())
	require.Eventually(t, func() bool { return w.Write([]byte("+OK\r\n")) != nil }, 5*time.Second, time.Millisecond,
		"a write to a reset connection fails")
	require.NoError(t, server.Close())
	assert.ErrorIs(t, w.Write([]byte("+OK\r\n")), net.ErrClosed)
}

// TestRawWriterDeadline checks that a write waiting for room ends at the
// connection's write deadline, as net.Conn.Write does: a drain and CLIENT
// KILL rely on deadlines to end a write to a client that does not read.
func TestRawWriterDeadline(t *testing.T) {
	server, _ := tcpPair(t) // the client never reads
	w := NewRawWriter(server)
	require.NoError(t, server.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	err := w.Write(make([]byte, 64<<20))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

// TestRawWriterAllocatesNothing checks that a write allocates nothing: it
// runs once per batch of replies.
func TestRawWriterAllocatesNothing(t *testing.T) {
	server, client := tcpPair(t)
	w := NewRawWriter(server)
	reply := []byte(":1\r\n")
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		if err := w.Write(reply); err != nil {
			panic(err)
		}
		if _, err := io.ReadFull(client, buf[:len(reply)]); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

// TestRawWriterNeedsASocket checks that a connection with no socket of its
// own (a pipe here; TLS in production) gets no RawWriter, so Conn
// writes through net.Conn.
func TestRawWriterNeedsASocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	assert.Nil(t, NewRawWriter(a))
}
