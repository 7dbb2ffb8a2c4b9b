package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// aLongTimeAgo is a read deadline that has passed: a Read given it returns at once.
var aLongTimeAgo = time.Unix(1, 0)

// guardConn is a client connection as redcon reads it. Every byte passes its
// framer before redcon sees it, and it takes the connection's part in a
// graceful drain: while the server drains, a Read between requests takes
// only what the socket already holds, without waiting, and reports io.EOF
// once it holds nothing, so redcon closes the connection as soon as every
// request it has in hand is answered. Waiting for a quiet gap instead would
// never end for a client under steady load.
type guardConn struct {
	net.Conn
	frame framer       // touched only by Read, on the connection's goroutine
	perr  error        // a protocol error: the next Read replies with it and returns it
	rerr  error        // a read error held back while Read returned bytes
	last  atomic.Int64 // unix nanoseconds of the last bytes read, for CLIENT LIST's idle=

	mu       sync.Mutex // guards the fields below, and read deadlines once draining
	idle     bool       // in Read between requests, or about to be
	draining bool
	drainEnd time.Time // zero, or when a drain stops reading new requests
	closed   bool
}

func newGuardConn(c net.Conn, maxRequest int64) *guardConn {
	g := &guardConn{Conn: c, frame: framer{max: maxRequest}}
	g.last.Store(time.Now().UnixNano())
	return g
}

// Read fills p with well-framed bytes. It returns once a request has ended
// in them, p is full, or the connection fails, never with both bytes and an
// error, since redcon drops the bytes of a Read that errs. Returning only at a
// request's end matters: redcon re-parses its whole buffer after each Read,
// so a large request trickled in small packets would otherwise cost time
// that grows with the square of its size.
func (g *guardConn) Read(p []byte) (int, error) {
	total := 0
	for g.perr == nil && g.rerr == nil {
		n, err := g.read1(p[total:])
		k, ended, perr := g.frame.scan(p[total : total+n])
		total += k
		g.perr, g.rerr = perr, err
		if ended || total == len(p) {
			break
		}
	}
	if total > 0 {
		g.last.Store(time.Now().UnixNano())
		return total, nil
	}
	return 0, g.fail()
}

// fail returns the error that ended the stream. A protocol error is replied
// to first: redcon has flushed every earlier reply before it calls Read again.
func (g *guardConn) fail() error {
	if g.perr == nil {
		return g.rerr
	}
	if g.rerr == nil {
		_, _ = g.Conn.Write([]byte("-ERR " + g.perr.Error() + "\r\n"))
		g.rerr = g.perr // reply once
	}
	return g.perr
}

// read1 reads once. While draining, a read between requests takes what the
// socket holds, if anything, and otherwise reads as io.EOF; past the drain's
// end it reads as io.EOF at once, so that a client whose requests always
// fill the socket is cut off too. A deadline that ends a wait inside a
// request is cleared by the next call.
func (g *guardConn) read1(p []byte) (int, error) {
	g.prepareRead()
	n, err := g.Conn.Read(p)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !g.isDraining() {
		return n, err
	}
	if !g.frame.idle() {
		return 0, nil
	}
	if g.pastDrainEnd() {
		return 0, io.EOF
	}
	return readNow(g.Conn, p)
}

// pastDrainEnd reports whether the drain has stopped taking new requests.
func (g *guardConn) pastDrainEnd() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.drainEnd.IsZero() && !time.Now().Before(g.drainEnd)
}

// prepareRead records whether the connection is between requests and, while
// draining, sets the deadline for this read.
func (g *guardConn) prepareRead() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.idle = g.frame.idle()
	if g.draining {
		_ = g.Conn.SetReadDeadline(g.deadlineLocked())
	}
}

// deadlineLocked is the drain's read deadline: none inside a request, which
// is left to finish, and one already passed between requests, so that the
// read takes only what has arrived (see read1).
func (g *guardConn) deadlineLocked() time.Time {
	if !g.idle {
		return time.Time{}
	}
	return aLongTimeAgo
}

// drain starts the connection's drain. end, if not zero, is when it stops
// waiting for new requests even from a client that never pauses.
func (g *guardConn) drain(end time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.draining, g.drainEnd = true, end
	if g.idle {
		_ = g.Conn.SetReadDeadline(g.deadlineLocked()) // wakes a blocked Read
	}
}

func (g *guardConn) isDraining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining
}

// Close closes the connection once; redcon, CLIENT KILL and a forced stop may all call it.
func (g *guardConn) Close() error {
	g.mu.Lock()
	closed := g.closed
	g.closed = true
	g.mu.Unlock()
	if closed {
		return nil
	}
	return g.Conn.Close()
}

// readNowFallback is readNow for connections without a file descriptor:
// it cannot look without waiting, so it reports nothing more to read.
func readNowFallback() (int, error) { return 0, io.EOF }
