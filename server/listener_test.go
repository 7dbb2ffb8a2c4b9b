package server

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMaxClients(t *testing.T) {
	_, addr := startServer(t, Config{MaxClients: 2})
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	for _, c := range []*rawConn{a, b} {
		c.send(t, respCmd("PING"))
		require.Equal(t, "+PONG", c.line(t))
	}
	extra := dialRaw(t, addr)
	assert.Equal(t, "-ERR max number of clients reached", extra.line(t))
	assert.True(t, extra.closedByServer(t))

	require.NoError(t, a.Close())
	eventually(t, "a place to free up", func() bool {
		c := dialRaw(t, addr)
		c.send(t, respCmd("PING"))
		l, err := c.r.ReadString('\n')
		return err == nil && l == "+PONG\r\n"
	})
	b.send(t, respCmd("INFO", "stats"))
	assert.GreaterOrEqual(t, atoi(t, infoField(b.bulk(t), "rejected_connections")), 1, "polling may have been refused too")
}

// flakyListener fails its first Accepts with EMFILE, as a process out of file descriptors does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32 // errors still to return; negative for always
	calls atomic.Int32
}

func (f *flakyListener) Accept() (net.Conn, error) {
	f.calls.Add(1)
	if n := f.fails.Load(); n != 0 {
		f.fails.Add(-1)
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept", syscall.EMFILE)}
	}
	return f.Listener.Accept()
}

func TestAcceptErrorsBackOffAndRecover(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	flaky := &flakyListener{Listener: ln}
	flaky.fails.Store(3)
	var logs syncBuffer
	_, addr := startServer(t, Config{Listener: flaky, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := dialRaw(t, addr)
	c.send(t, respCmd("PING"))
	assert.Equal(t, "+PONG", c.line(t), "served once the errors stop")
	calls := flaky.calls.Load()
	assert.True(t, calls == 4 || calls == 5, "three failures, one retry each, the connection, and maybe the next wait: %d calls", calls)
	assert.Equal(t, 3, bytes.Count(logs.Bytes(), []byte("accept failed; retrying")))
}

// TestCloseEndsAnAcceptBackoff checks a server stuck on accept errors still stops at once.
func TestCloseEndsAnAcceptBackoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	flaky := &flakyListener{Listener: ln}
	flaky.fails.Store(-1)
	s := newTestServer(t, Config{Listener: flaky})
	done := make(chan error, 1)
	go func() { done <- s.Serve(nil) }()
	eventually(t, "accept errors", func() bool { return flaky.calls.Load() >= 2 })
	require.NoError(t, s.Close())
	assert.NoError(t, waitServe(t, done))
}

// syncBuffer is a bytes.Buffer that a logger may write while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}
