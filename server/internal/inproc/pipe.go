package inproc

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// memPipe is the gateway's in-memory connection to its client of the
// server. Unlike net.Pipe, a write never waits for the reader: it appends
// to the reader's buffer and wakes it, so a batch and its replies each
// cross in one hand-off, not in one rendezvous per write and read (a
// connection writes its replies as several buffers). The gateway's end
// waits on its call's context rather than on a deadline's timer.
type memPipe struct {
	toServer, toGateway memHalf
	server              memConn // the server's end
}

// memHalf is one direction of a memPipe.
type memHalf struct {
	mu     sync.Mutex // guards buf and closed
	buf    []byte
	closed bool
	ready  chan struct{} // has a token when buf has bytes or closed is set
}

// memHalfKeep is the most capacity a half keeps once its bytes are read:
// a huge batch does not pin its buffer for the connection's life.
const memHalfKeep = 64 << 10

func newMemPipe() *memPipe {
	p := &memPipe{}
	p.toServer.ready = make(chan struct{}, 1)
	p.toGateway.ready = make(chan struct{}, 1)
	p.server = memConn{p: p, dl: newPipeDeadline()}
	return p
}

// write appends b for the reader and wakes it.
func (h *memHalf) write(b []byte) (int, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	h.buf = append(h.buf, b...)
	h.mu.Unlock()
	h.wake()
	return len(b), nil
}

func (h *memHalf) wake() {
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// take moves what the half holds into b, if anything: n > 0, or io.EOF
// once it is closed and empty, or (0, nil) when there is nothing yet.
func (h *memHalf) take(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) == 0 {
		if h.closed {
			h.wake() // for any other reader
			return 0, io.EOF
		}
		return 0, nil
	}
	n := copy(b, h.buf)
	h.buf = h.buf[:copy(h.buf, h.buf[n:])]
	if len(h.buf) > 0 {
		h.wake()
	} else if cap(h.buf) > memHalfKeep {
		h.buf = nil
	}
	return n, nil
}

// read waits until the half has bytes, it closes, or done is closed.
func (h *memHalf) read(b []byte, done <-chan struct{}, doneErr func() error) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if n, err := h.take(b); n > 0 || err != nil {
			return n, err
		}
		select {
		case <-h.ready:
		case <-done:
			return 0, doneErr()
		}
	}
}

func (h *memHalf) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wake()
}

// close closes both directions, from either end.
func (p *memPipe) close() {
	p.toServer.close()
	p.toGateway.close()
}

// gatewayWrite sends a batch to the server.
func (p *memPipe) gatewayWrite(b []byte) (int, error) { return p.toServer.write(b) }

// gatewayRead reads replies, waiting at most until ctx ends.
func (p *memPipe) gatewayRead(ctx context.Context, b []byte) (int, error) {
	return p.toGateway.read(b, ctx.Done(), ctx.Err)
}

// memConn is the server's end of a memPipe, a net.Conn. Its writes never
// wait, so a write deadline has nothing to bound; its read deadline wakes
// a waiting read as a socket's does (a drain sets one).
type memConn struct {
	p  *memPipe
	dl *pipeDeadline
}

func (c *memConn) Read(b []byte) (int, error) {
	return c.p.toServer.read(b, c.dl.wait(), func() error { return os.ErrDeadlineExceeded })
}

func (c *memConn) Write(b []byte) (int, error) {
	if c.dl.expired() {
		return 0, os.ErrDeadlineExceeded
	}
	return c.p.toGateway.write(b)
}

func (c *memConn) Close() error {
	c.p.close()
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr { return memAddr{} }

func (c *memConn) SetDeadline(t time.Time) error {
	c.dl.set(t)
	return nil
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.dl.set(t)
	return nil
}

func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// memAddr is a memConn's address, as CLIENT LIST shows it.
type memAddr struct{}

func (memAddr) Network() string { return "pipe" }
func (memAddr) String() string  { return "pipe" }

// pipeDeadline is a read deadline: a channel closed once it passes.
type pipeDeadline struct {
	mu     sync.Mutex // guards the fields below
	timer  *time.Timer
	passed chan struct{} // closed once the deadline passes
}

func newPipeDeadline() *pipeDeadline { return &pipeDeadline{passed: make(chan struct{})} }

// set sets the deadline; the zero time clears it.
func (d *pipeDeadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.passed // the timer's function ran or runs: wait until it has closed the channel
	}
	d.timer = nil
	closed := isClosed(d.passed)
	if t.IsZero() {
		if closed {
			d.passed = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.passed = make(chan struct{})
		}
		ch := d.passed
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	if !closed {
		close(d.passed)
	}
}

func (d *pipeDeadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.passed
}

func (d *pipeDeadline) expired() bool { return isClosed(d.wait()) }

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
