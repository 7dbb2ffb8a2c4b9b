package server

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigReply is a test command whose reply is its argument's number of bytes.
func bigReply() command {
	return command{name: "test.big", arity: 2, run: func(s *Server, c *client, args [][]byte) {
		n, _ := strconv.Atoi(string(args[1]))
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		c.conn.WriteArray((n + len(chunk) - 1) / len(chunk))
		for ; n > 0; n -= len(chunk) {
			c.conn.WriteBulk(chunk[:min(n, len(chunk))])
		}
	}}
}

// TestOutputLimitDisconnects checks a reply past --client-output-limit
// closes its client, and is counted in INFO, while one under it goes out.
func TestOutputLimitDisconnects(t *testing.T) {
	s, addr := startServerCmds(t, Config{ClientOutputLimit: 1 << 20}, bigReply())
	c := dialRaw(t, addr)
	c.send(t, respCmd("TEST.BIG", strconv.Itoa(512<<10)))
	assert.Equal(t, "*8", c.line(t), "a reply under the limit goes out")
	for range 8 {
		assert.Len(t, c.bulk(t), 64<<10)
	}
	c.send(t, respCmd("TEST.BIG", strconv.Itoa(4<<20)))
	assert.True(t, c.closedByServer(t), "a reply over the limit closes the client")
	// forget closes the socket before it counts, so the count may trail the close by a moment.
	assert.Eventually(t, func() bool { return s.outputLimitClosed.Load() == 1 }, deadline, time.Millisecond)
	assertServing(t, addr)

	_, addr = startServerCmds(t, Config{ClientOutputLimit: -1}, bigReply())
	c = dialRaw(t, addr)
	c.send(t, respCmd("TEST.BIG", strconv.Itoa(4<<20)))
	assert.Equal(t, "*64", c.line(t), "no limit")
}

// TestUnreadPipelineStaysBounded pipelines 1M commands, each with a 1 KiB
// reply, and never reads: 1 GiB of replies if the server kept them. The
// server must stop reading the client once its socket is full, so what the
// client manages to send, and the server's heap, stay small, and other
// clients are served meanwhile.
func TestUnreadPipelineStaysBounded(t *testing.T) {
	_, addr := startServer(t, Config{})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(64<<10))

	heapBefore := heapInUse()
	req := []byte(respCmd("ECHO", strings.Repeat("e", 1<<10)))
	batch := bytes.Repeat(req, 1000)
	sent := 0
	// Writes stop making progress once the server stops reading: a write
	// that cannot finish within the deadline is that point.
	for sent < 1_000_000 {
		require.NoError(t, conn.SetWriteDeadline(time.Now().Add(500*time.Millisecond)))
		n, err := conn.Write(batch)
		sent += n / len(req)
		if err != nil {
			break
		}
	}
	assert.Less(t, sent, 1_000_000, "the server stopped reading before the client sent everything")
	assertServing(t, addr)
	grew := int64(heapInUse()) - int64(heapBefore)
	t.Logf("sent %d of 1000000 commands (%d MiB of replies due) before the server stopped reading; heap grew %d KiB",
		sent, sent>>10, grew>>10)
	assert.Less(t, grew, int64(64<<20), "the server's heap stays bounded")

	// The client can still read every reply to what it sent.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	want := int64(sent) * int64(len("$1024\r\n")+1<<10+2)
	got, err := io.CopyN(io.Discard, conn, want)
	assert.NoError(t, err)
	assert.Equal(t, want, got)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
