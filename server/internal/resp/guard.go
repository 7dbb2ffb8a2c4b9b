package resp

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

// Guard is a client's socket. It takes the connection's part in a
// graceful drain: while the server drains, a read between requests takes
// only what the socket already holds, without waiting, and reports io.EOF
// once it holds nothing, so the connection closes as soon as every request
// it has in hand is answered. Waiting for a quiet gap instead would never
// end for a client under steady load.
type Guard struct {
	net.Conn
	raw  *RawReader    // reads requests from the socket; nil: through Conn
	Last atomic.Int64  // unix nanoseconds of the last bytes read, for CLIENT LIST's idle=; the server sets it
	done chan struct{} // closed by Close

	mu       sync.Mutex // guards the fields below, and read deadlines once draining
	idle     bool       // in a read between requests, or about to be
	draining bool
	drainEnd time.Time // zero, or when a drain stops reading new requests
	closed   bool
}

// NewGuard returns the guard of c.
func NewGuard(c net.Conn) *Guard {
	g := &Guard{Conn: c, done: make(chan struct{}), raw: NewRawReader(c)}
	g.Last.Store(time.Now().UnixNano())
	return g
}

// readRequest reads what the client has sent into p, waiting for it. idle
// says whether the connection stands between requests, which a drain needs
// to know. It returns bytes or an error, never both.
func (g *Guard) readRequest(p []byte, idle bool) (int, error) {
	for {
		n, err := g.read1(p, idle)
		if n > 0 {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// read1 reads once. While draining, a read between requests takes what the
// socket holds, if anything, and otherwise reads as io.EOF; past the drain's
// end it reads as io.EOF at once, so that a client whose requests always
// fill the socket is cut off too. A deadline that ends a wait inside a
// request is cleared by the next call.
func (g *Guard) read1(p []byte, idle bool) (int, error) {
	if g.PrepareRead(idle) {
		return g.readDraining(p)
	}
	n, err := g.readSocket(p)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !g.isDraining() {
		return n, err
	}
	if !idle {
		return 0, nil
	}
	return g.readDraining(p) // the drain began while this read waited
}

// readSocket reads what the client has sent, waiting for it.
func (g *Guard) readSocket(p []byte) (int, error) {
	if g.raw != nil {
		return g.raw.Read(p)
	}
	return g.Conn.Read(p)
}

// readDraining takes what the socket holds without waiting. The drain's
// deadline, which woke a waiting read, is cleared first: a socket read
// refuses to start once its deadline has passed, even one that would not wait.
func (g *Guard) readDraining(p []byte) (int, error) {
	if g.pastDrainEnd() {
		return 0, io.EOF
	}
	g.mu.Lock()
	_ = g.Conn.SetReadDeadline(time.Time{})
	g.mu.Unlock()
	return ReadNow(g.Conn, p)
}

// pastDrainEnd reports whether the drain has stopped taking new requests.
func (g *Guard) pastDrainEnd() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.drainEnd.IsZero() && !time.Now().Before(g.drainEnd)
}

// PrepareRead records whether the connection is between requests, and
// reports whether this read is a draining one between requests. While
// draining, a read inside a request gets no deadline: it is left to finish.
func (g *Guard) PrepareRead(idle bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.idle = idle
	if g.draining && !idle {
		_ = g.Conn.SetReadDeadline(time.Time{})
	}
	return g.draining && idle
}

// deadlineLocked is the drain's read deadline: none inside a request, which
// is left to finish, and one already passed between requests, so that the
// read takes only what has arrived (see read1).
func (g *Guard) deadlineLocked() time.Time {
	if !g.idle {
		return time.Time{}
	}
	return aLongTimeAgo
}

// Drain starts the connection's drain. end, if not zero, is when it stops
// waiting for new requests even from a client that never pauses.
func (g *Guard) Drain(end time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.draining, g.drainEnd = true, end
	if g.idle {
		_ = g.Conn.SetReadDeadline(g.deadlineLocked()) // wakes a blocked Read
	}
}

// Closed reports whether Close was called.
func (g *Guard) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *Guard) isDraining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining
}

// Close closes the connection once; its own goroutine, CLIENT KILL and a
// forced stop may all call it, from any goroutine, and it never waits. The
// socket's reads and writes end at once, but closing the socket itself
// waits until its goroutine leaves RawReader.Stay, which may be running
// the very command that called Close: so that happens on a goroutine of
// its own.
func (g *Guard) Close() error {
	g.mu.Lock()
	closed := g.closed
	g.closed = true
	g.mu.Unlock()
	if closed {
		return nil
	}
	close(g.done)
	go func() { _ = g.Conn.Close() }()
	return nil
}

// Raw returns the socket's raw reader; nil where reads go through Conn.
func (g *Guard) Raw() *RawReader { return g.raw }

// Idle reports whether the connection is in a read between requests, or
// about to be.
func (g *Guard) Idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idle
}
