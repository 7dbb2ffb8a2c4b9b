//go:build unix

package resp

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRawReaderReads checks that a read waits for the client's bytes and
// returns what arrived, and io.EOF once the client closes.
func TestRawReaderReads(t *testing.T) {
	server, client := tcpPair(t)
	r := NewRawReader(server)
	require.NotNil(t, r, "a TCP connection has a socket of its own")
	got := make(chan string, 1)
	go func() {
		p := make([]byte, 64)
		n, err := r.Read(p)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(p[:n])
	}()
	_, err := client.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	require.NoError(t, err)
	assert.Equal(t, "*1\r\n$4\r\nPING\r\n", <-got)
	require.NoError(t, client.Close())
	n, err := r.Read(make([]byte, 64))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF)
}

// TestRawReaderDeadlineAndClose checks that a waiting read ends at the
// connection's read deadline, which a drain uses to wake it, and that a
// read of a closed connection fails as net.Conn.Read does.
func TestRawReaderDeadlineAndClose(t *testing.T) {
	server, _ := tcpPair(t) // the client sends nothing
	r := NewRawReader(server)
	require.NoError(t, server.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := r.Read(make([]byte, 64))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, server.Close())
	_, err = r.Read(make([]byte, 64))
	assert.ErrorIs(t, err, net.ErrClosed)
}

// TestRawReaderAllocatesNothing checks that a read allocates nothing: each
// batch of requests takes two.
func TestRawReaderAllocatesNothing(t *testing.T) {
	server, client := tcpPair(t)
	r := NewRawReader(server)
	req, buf := []byte("*1\r\n$4\r\nPING\r\n"), make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := client.Write(req); err != nil {
			panic(err)
		}
		if _, err := r.Read(buf); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

// TestRawReaderNeedsASocket checks that a connection with no socket of
// its own gets no RawReader, so Guard reads through net.Conn.
func TestRawReaderNeedsASocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	assert.Nil(t, NewRawReader(a))
}
