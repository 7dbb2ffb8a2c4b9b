//go:build unix

package server

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoStayer answers each read by sending the client what it read, and
// counts the reads stay made (each asks for room first).
type echoStayer struct {
	t     *testing.T
	conn  net.Conn
	buf   []byte
	reads int
	stop  string      // got returns false once it reads this
	close *resp.Guard // closed by got, as a command that closes its own connection does
	nexts int
	leave bool // next says stop: a drain began
}

func (e *echoStayer) Room() []byte { e.reads++; return e.buf }

func (e *echoStayer) Got(n int) bool {
	_, err := e.conn.Write(e.buf[:n])
	require.NoError(e.t, err)
	if e.close != nil {
		_ = e.close.Close()
	}
	return string(e.buf[:n]) != e.stop
}

func (e *echoStayer) Next() bool { e.nexts++; return !e.leave }

// TestStayReadsOncePerRequest checks that stay, between one request and
// the next, waits for the socket without a read that finds nothing: a
// client that sends each request once it has the last reply costs one
// read a request, not two. A few more reads are allowed, for readiness the
// poller reports late for bytes a read already took.
func TestStayReadsOncePerRequest(t *testing.T) {
	server, client := tcpPair(t)
	r := resp.NewRawReader(server)
	e := &echoStayer{t: t, conn: server, buf: make([]byte, 64), stop: "stop"}
	done := make(chan error, 1)
	go func() { done <- r.Stay(e) }()

	const requests = 200
	reply := make([]byte, 64)
	for i := 0; i < requests; i++ {
		_, err := client.Write([]byte("ping"))
		require.NoError(t, err)
		_, err = io.ReadFull(client, reply[:4])
		require.NoError(t, err)
	}
	_, err := client.Write([]byte("stop"))
	require.NoError(t, err)
	require.NoError(t, <-done, "got's false ends stay without an error")
	assert.LessOrEqual(t, e.reads, requests+1+requests/10, "reads for %d requests", requests)
	assert.GreaterOrEqual(t, e.nexts, requests)
}

// TestStayReadsAFullBufferAgain checks that a read that filled room is
// followed by another at once: bytes already in the socket raise no new
// readiness to wait for.
func TestStayReadsAFullBufferAgain(t *testing.T) {
	server, client := tcpPair(t)
	r := resp.NewRawReader(server)
	e := &echoStayer{t: t, conn: server, buf: make([]byte, 4), stop: "stop"}
	_, err := client.Write([]byte("abcdefghstop")) // three full reads, the last of which stops
	require.NoError(t, err)
	require.NoError(t, r.Stay(e))
	assert.Equal(t, 3, e.reads)
	got := make([]byte, 12)
	_, err = io.ReadFull(client, got)
	require.NoError(t, err)
	assert.Equal(t, "abcdefghstop", string(got))
}

// TestStayLeavesForADrain checks that stay asks before every further read,
// even after one that filled room, so that a drain ends a connection whose
// client keeps the socket full.
func TestStayLeavesForADrain(t *testing.T) {
	server, client := tcpPair(t)
	e := &echoStayer{t: t, conn: server, buf: make([]byte, 4), leave: true}
	_, err := client.Write([]byte("abcdefgh"))
	require.NoError(t, err)
	require.NoError(t, resp.NewRawReader(server).Stay(e))
	assert.Equal(t, 1, e.reads)
}

// TestStayEnds checks each way stay ends besides got's false: the client's
// close (io.EOF), the read deadline a drain sets, and a close of the socket
// by a command stay runs.
func TestStayEnds(t *testing.T) {
	server, client := tcpPair(t)
	e := &echoStayer{t: t, conn: server, buf: make([]byte, 64)}
	require.NoError(t, client.Close())
	assert.ErrorIs(t, resp.NewRawReader(server).Stay(e), io.EOF)

	server, _ = tcpPair(t)
	e = &echoStayer{t: t, conn: server, buf: make([]byte, 64)}
	require.NoError(t, server.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	assert.ErrorIs(t, resp.NewRawReader(server).Stay(e), os.ErrDeadlineExceeded)

	server, client = tcpPair(t)
	e = &echoStayer{t: t, conn: server, buf: make([]byte, 64)}
	e.close = resp.NewGuard(server)
	_, err := client.Write([]byte("quit"))
	require.NoError(t, err)
	assert.ErrorIs(t, resp.NewRawReader(server).Stay(e), net.ErrClosed,
		"a close from inside stay does not wait for stay, and ends it")
}

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
