package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/require"
)

// deadline bounds every wait in these tests; none is expected to come near it.
const deadline = 20 * time.Second

// startServer runs a Server on 127.0.0.1:0 for the test's lifetime and returns
// it with its address. Fields of cfg left zero get test defaults.
func startServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	return startServerCmds(t, cfg)
}

// startServerCmds is startServer with extra, test-only commands in the table.
func startServerCmds(tb testing.TB, cfg Config, extra ...command) (*Server, string) {
	tb.Helper()
	s := newTestServer(tb, cfg)
	s.register(extra)
	return s, serveTest(tb, s)
}

// newTestServer returns a Server for cfg, with test defaults for fields left zero.
func newTestServer(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	if cfg.Store == nil {
		cfg.Store = mustStore(tb)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) // goroutines may log after the test
	}
	s, err := New(cfg)
	require.NoError(tb, err)
	return s
}

// serveTest runs s until the test ends and returns its address.
func serveTest(tb testing.TB, s *Server) string {
	tb.Helper()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ready) }()
	select {
	case a := <-ready:
		tb.Cleanup(func() { _ = s.Close(); <-done })
		return a.String()
	case err := <-done:
		tb.Fatalf("serve: %v", err)
	case <-time.After(deadline):
		tb.Fatal("server did not start")
	}
	return ""
}

// newClient returns a go-redis client for addr speaking protocol version proto (2 or 3).
func newClient(t *testing.T, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ctxT returns a context that ends with the test or after deadline.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// bothProtocols runs f as a subtest once for RESP2 and once for RESP3.
func bothProtocols(t *testing.T, f func(t *testing.T, proto int)) {
	for _, proto := range []int{2, 3} {
		t.Run(map[int]string{2: "RESP2", 3: "RESP3"}[proto], func(t *testing.T) { f(t, proto) })
	}
}

// rawConn is a plain TCP connection for sending bytes no client library would.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(deadline)))
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// send writes s and fails the test if it cannot.
func (c *rawConn) send(t *testing.T, s string) {
	t.Helper()
	_, err := c.Write([]byte(s))
	require.NoError(t, err)
}

// line reads one reply line without its CRLF.
func (c *rawConn) line(t *testing.T) string {
	t.Helper()
	l, err := c.r.ReadString('\n')
	require.NoError(t, err, "reading a reply line")
	return strings.TrimSuffix(l, "\r\n")
}

// bulk reads one bulk string reply.
func (c *rawConn) bulk(t *testing.T) string {
	t.Helper()
	h := c.line(t)
	require.True(t, strings.HasPrefix(h, "$"), "a bulk string, not %q", h)
	n, err := strconv.Atoi(h[1:])
	require.NoError(t, err)
	buf := make([]byte, n+2)
	_, err = io.ReadFull(c.r, buf)
	require.NoError(t, err)
	return string(buf[:n])
}

// closedByServer reports whether the server has closed c: a read ends without data.
func (c *rawConn) closedByServer(t *testing.T) bool {
	t.Helper()
	_, err := c.r.ReadByte()
	return err != nil
}

// respCmd encodes args as a RESP array of bulk strings, as clients send commands.
func respCmd(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// fakeClock is a settable clock that the server may read from other goroutines.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(at time.Time) *fakeClock {
	f := &fakeClock{}
	f.ns.Store(at.UnixNano())
	return f
}

func (f *fakeClock) Now() time.Time      { return time.Unix(0, f.ns.Load()) }
func (f *fakeClock) Set(at time.Time)    { f.ns.Store(at.UnixNano()) }
func (f *fakeClock) Add(d time.Duration) { f.ns.Add(int64(d)) }

// eventually waits until cond holds, failing the test after deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, deadline, time.Millisecond, "timed out waiting for %s", what)
}

// mustStore returns an empty store with the default configuration.
func mustStore(tb testing.TB) *shard.Map {
	tb.Helper()
	m, err := shard.New(shard.Config{})
	require.NoError(tb, err)
	return m
}

// benchClient is an authenticated client of s on rc, without a socket: as
// newClient makes one, for tests that run batches through the connection's
// path directly.
func benchClient(s *Server, rc *resp.Conn) *client {
	c := &client{}
	c.Conn, c.conn = rc, errCounter{clientConn: rc, c: c}
	c.Authed, c.Out, c.Proto = true, c.conn, 2
	s.clientSlot.Set(&c.Session, c)
	s.dec.Open(&c.Session, &c.dec, rc)
	s.rt.Open(&c.Session, &c.rt)
	return c
}

// quietAllocsPerRun is testing.AllocsPerRun, the least of three tries.
// AllocsPerRun counts every malloc of the process while f runs, so on a
// loaded host, where 1000 runs can take long enough, goroutines a previous
// test left winding down (a cluster node's gossip, a client's pool) can add
// a thousand and make it report 1. An f that allocates does so in every
// try, so the least of three still catches it.
func quietAllocsPerRun(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for i := 0; i < 2 && least > 0; i++ {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
