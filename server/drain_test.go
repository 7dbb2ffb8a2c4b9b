package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blocker is a test-only command, TEST.BLOCK, that holds its connection
// until released, so a test can start a drain while a client is busy.
type blocker struct {
	entered chan struct{} // receives each time TEST.BLOCK starts
	release chan struct{} // closed to let every TEST.BLOCK reply
	once    sync.Once
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{entered: make(chan struct{}, 16), release: make(chan struct{})}
	t.Cleanup(b.free) // never leave a handler blocked
	return b
}

func (b *blocker) free() { b.once.Do(func() { close(b.release) }) }

func (b *blocker) command() command {
	return command{name: "test.block", arity: 1, run: func(s *Server, c *client, args [][]byte) {
		b.entered <- struct{}{}
		<-b.release
		c.conn.WriteString("UNBLOCKED")
	}}
}

// waitEntered waits for TEST.BLOCK to start.
func (b *blocker) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-b.entered:
	case <-time.After(deadline):
		t.Fatal("TEST.BLOCK did not start")
	}
}

// draining reports whether s has begun to drain.
func (s *Server) draining() bool { return s.listener().Draining() }

// shutdownAsync calls Shutdown in the background and returns its result channel.
func shutdownAsync(s *Server, timeout time.Duration) chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	return done
}

// TestShutdownDeliversEveryPipelinedReply is the graceful drain SIGTERM promises: a
// client pipelines a command that is slow, then n PINGs, and Shutdown starts
// while the first is running and most of the rest are not yet read. Every
// reply must arrive, in order, before the connection closes.
func TestShutdownDeliversEveryPipelinedReply(t *testing.T) {
	const n = 50000
	b := newBlocker(t)
	s, addr, served := startStoppable(t, Config{}, b.command())
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(deadline)))

	go func() { _, _ = conn.Write([]byte(respCmd("TEST.BLOCK") + pingPipeline(n))) }()
	replies := make(chan error, 1)
	go func() { replies <- readPipelineReplies(conn, n) }()
	b.waitEntered(t)

	stopped := shutdownAsync(s, deadline)
	eventually(t, "the drain to start", s.draining)
	b.free()

	require.NoError(t, <-replies, "every reply arrives")
	_, err = conn.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "then the connection is closed")
	assert.NoError(t, <-stopped)
	assert.NoError(t, waitServe(t, served))
}

// pingPipeline returns n commands PING 0 … PING n-1.
func pingPipeline(n int) string {
	var b []byte
	for i := range n {
		arg := strconv.Itoa(i)
		b = fmt.Appendf(b, "*2\r\n$4\r\nPING\r\n$%d\r\n%s\r\n", len(arg), arg)
	}
	return string(b)
}

// readPipelineReplies reads TEST.BLOCK's reply and the n echoes of pingPipeline.
func readPipelineReplies(conn net.Conn, n int) error {
	r := bufio.NewReader(conn)
	if l, err := r.ReadString('\n'); err != nil || l != "+UNBLOCKED\r\n" {
		return fmt.Errorf("TEST.BLOCK's reply: %q, %v", l, err)
	}
	for i := range n {
		arg := strconv.Itoa(i)
		want := fmt.Sprintf("$%d\r\n%s\r\n", len(arg), arg)
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil {
			return fmt.Errorf("reply %d of %d: %w", i+1, n, err)
		}
		if string(got) != want {
			return fmt.Errorf("reply %d = %q, want %q", i+1, got, want)
		}
	}
	return nil
}

func TestShutdownClosesIdleClientsAndRefusesNewOnes(t *testing.T) {
	b := newBlocker(t)
	s, addr, served := startStoppable(t, Config{}, b.command())
	idle := dialRaw(t, addr)
	idle.send(t, respCmd("PING"))
	require.Equal(t, "+PONG", idle.line(t))
	pooled := newClient(t, addr, 3)
	require.NoError(t, pooled.Ping(ctxT(t)).Err())
	busy := dialRaw(t, addr)
	busy.send(t, respCmd("TEST.BLOCK"))
	b.waitEntered(t)

	stopped := shutdownAsync(s, deadline)
	assert.True(t, idle.closedByServer(t), "an idle client is closed")
	eventually(t, "new clients to be refused", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) while a client was busy", err)
	default:
	}
	b.free()
	assert.Equal(t, "+UNBLOCKED", busy.line(t))
	assert.True(t, busy.closedByServer(t))
	assert.NoError(t, <-stopped)
	assert.NoError(t, waitServe(t, served))
}

// TestShutdownFinishesARequestUnderWay checks a request half received when
// the drain starts is waited for and answered.
func TestShutdownFinishesARequestUnderWay(t *testing.T) {
	s, addr, served := startStoppable(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, respCmd("PING"))
	require.Equal(t, "+PONG", c.line(t))
	c.send(t, "*2\r\n$4\r\nECHO\r\n$5\r\nhe")
	g := onlyGuard(t, s)
	eventually(t, "the half request to be read", func() bool { return !g.Idle() })

	stopped := shutdownAsync(s, deadline)
	eventually(t, "the drain to start", s.draining)
	c.send(t, "llo\r\n")
	assert.Equal(t, "$5", c.line(t))
	assert.Equal(t, "hello", c.line(t))
	assert.True(t, c.closedByServer(t))
	assert.NoError(t, <-stopped)
	assert.NoError(t, waitServe(t, served))
}

// onlyGuard returns the one connection s has.
func onlyGuard(t *testing.T, s *Server) *resp.Guard {
	t.Helper()
	conns := s.listener().Conns()
	require.Len(t, conns, 1)
	return conns[0]
}

// TestShutdownForcesWhenTheContextEnds checks a client that will not finish
// is closed once ctx ends, and Shutdown says so.
func TestShutdownForcesWhenTheContextEnds(t *testing.T) {
	b := newBlocker(t)
	s, addr, served := startStoppable(t, Config{}, b.command())
	stuck := dialRaw(t, addr)
	stuck.send(t, respCmd("TEST.BLOCK"))
	b.waitEntered(t)

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(ctx) }()
	eventually(t, "the drain to start", s.draining)
	cancel()
	assert.ErrorIs(t, <-stopped, context.Canceled)
	assert.True(t, stuck.closedByServer(t), "the stuck client is closed")
	b.free()
	assert.ErrorIs(t, waitServe(t, served), context.Canceled, "Serve reports how the stop went")
}

func TestShutdownAndCloseAreIdempotent(t *testing.T) {
	s, _, served := startStoppable(t, Config{})
	results := make(chan error, 3)
	for range 3 {
		go func() { results <- s.Shutdown(ctxT(t)) }()
	}
	for range 3 {
		assert.NoError(t, <-results)
	}
	assert.NoError(t, s.Close())
	assert.NoError(t, s.Close())
	assert.NoError(t, waitServe(t, served))
}

func TestStopBeforeServe(t *testing.T) {
	s := newTestServer(t, Config{})
	require.NoError(t, s.Shutdown(ctxT(t)))
	assert.ErrorIs(t, s.Serve(nil), ErrServerClosed)
}

// TestSweepLoopFreesExpiredKeys checks Serve runs the store's sweep and
// Shutdown stops it.
func TestSweepLoopFreesExpiredKeys(t *testing.T) {
	clk := newFakeClock(time.Unix(1700000000, 0))
	s, addr, served := startStoppable(t, Config{Clock: clk.Now, SweepInterval: time.Millisecond})
	c := newClient(t, addr, 3)
	require.NoError(t, c.Do(ctxT(t), "RL.SLIDE", "k", "5", "1").Err())
	require.EqualValues(t, 1, s.cfg.Store.Len())
	clk.Add(time.Hour)
	eventually(t, "the sweep to free the key", func() bool { return s.cfg.Store.Len() == 0 })
	require.NoError(t, s.Shutdown(ctxT(t)))
	assert.NoError(t, waitServe(t, served))
	s.life.Lock()
	defer s.life.Unlock()
	assert.Nil(t, s.sweepEnd, "the sweep was stopped")
}
