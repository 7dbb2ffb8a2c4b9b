package cluster

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// peerConn is one pipelined connection. Batches from many clients are
// appended to one output buffer, which a writer goroutine sends in as few
// writes as it can; the reader fills the oldest call's replies.
type peerConn struct {
	mu      sync.Mutex // guards nc's setting, out, outDL, spare, writing, err, and pending's order
	nc      net.Conn   // nil until dialled
	out     []byte     // batches not yet written
	outDL   time.Time  // the deadline of the oldest batch in out
	spare   []byte     // the buffer last written, for out's next use
	writing bool       // the writer has been woken and has not yet found out empty
	wake    chan struct{}
	pending chan *call
	err     error
	broken  atomic.Bool

	raw      syscall.RawConn // nc's socket, for staleLocked; nil until dialled, or if it has none
	lastSent time.Time       // the deadline of the last batch queued (see staleLocked)
	// fairFrom is when the connection became ready plus half the timeout:
	// a batch whose deadline comes before it had no fair chance of a reply
	// (see ErrNoAnswerYet). Set before readLoop starts.
	fairFrom time.Time
}

// call is one batch on a connection.
type call struct {
	n        int
	r        Replier
	deadline time.Time // its replies must all have come by then
}

// maxPending bounds the batches in flight on one connection.
const maxPending = 1024

// maxSpare is the largest output buffer kept for reuse.
const maxSpare = 1 << 20

// errNoReplyInTime is a batch whose replies did not all come by its deadline.
var errNoReplyInTime = errors.New("no reply in time")

// ErrNoAnswerYet wraps a timeout on a new connection the peer had not
// answered in time: its handshake did not finish, or finished when less
// than half of the first batch's time was left. A process that restarts
// binds its port before it serves (it advertises the port), so a peer
// that dials it meanwhile connects and waits, where a refusal would have
// told it to try again; callers may treat this error as they treat a
// refused connection.
var ErrNoAnswerYet = errors.New("no answer yet on a new connection")

func newPeerConn() *peerConn {
	return &peerConn{pending: make(chan *call, maxPending), wake: make(chan struct{}, 1)}
}

// enqueue queues a batch for the writer and its call for the reader.
func (pc *peerConn) enqueue(c *call, payload []byte) error {
	pc.mu.Lock()
	if pc.err != nil {
		err := pc.err
		pc.mu.Unlock()
		return err
	}
	if pc.staleLocked(c.deadline) { // see peer_alive.go
		pc.mu.Unlock()
		return errPeerClosed
	}
	select {
	case pc.pending <- c:
	default:
		pc.mu.Unlock()
		return errors.New("too many batches in flight")
	}
	pc.lastSent = c.deadline
	if len(pc.out) == 0 {
		pc.outDL = c.deadline
	}
	pc.out = append(pc.out, payload...)
	if !pc.writing { // under mu: close closes wake under it
		pc.writing = true
		select {
		case pc.wake <- struct{}{}:
		default:
		}
	}
	pc.mu.Unlock()
	return nil
}

// writeLoop writes what enqueue gathers: one write carries every batch
// queued while the previous write was under way. A write ends by the
// deadline of the oldest batch in it: a peer that does not read cannot
// hold a batch past its bound.
//
// Woken, it first yields once: the client connections that are runnable
// then queue their batches too, and one write carries them all. Under load
// (loadtest/cluster.py, -P 16) that cut the forwarding node's writes, and
// the owners' reads and writes, by about 40%, and the server CPU per
// request by 12%. Idle, the yield finds nothing else to run and costs a
// few hundred nanoseconds.
func (pc *peerConn) writeLoop() {
	for range pc.wake {
		runtime.Gosched()
		for {
			pc.mu.Lock()
			if len(pc.out) == 0 || pc.err != nil {
				pc.writing = false
				pc.mu.Unlock()
				break
			}
			buf, dl := pc.out, pc.outDL
			pc.out, pc.spare = pc.spare[:0], nil
			pc.mu.Unlock()
			_ = pc.nc.SetWriteDeadline(dl)
			if _, err := pc.nc.Write(buf); err != nil {
				pc.close(err)
				return
			}
			if cap(buf) <= maxSpare {
				pc.mu.Lock()
				pc.spare = buf[:0]
				pc.mu.Unlock()
			}
		}
	}
}

// failure is the error that broke the connection, for its batches.
func (pc *peerConn) failure() error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return fmt.Errorf("%w: %w", ErrUnreachable, pc.err)
}

// failAll fails every batch still queued; close has closed pending.
func (pc *peerConn) failAll() {
	err := pc.failure()
	for c := range pc.pending {
		c.r.Replies(nil, err)
	}
}

func (pc *peerConn) isBroken() bool { return pc.broken.Load() }

// close breaks the connection; the reader, or the dial, then fails every
// waiting batch.
func (pc *peerConn) close(err error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.failLocked(err)
}

func (pc *peerConn) failLocked(err error) {
	if pc.err == nil {
		pc.err = err
		pc.broken.Store(true)
		close(pc.pending) // no enqueue follows: it checks err under mu
		close(pc.wake)
		if pc.nc != nil {
			_ = pc.nc.Close()
		}
	}
}
