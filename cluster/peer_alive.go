package cluster

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"time"
)

// A connection to a peer is read only while a batch is in flight, so a
// peer that closes it while idle (its process died, and a supervisor
// restarted it) is not noticed until the next batch, which went out on it
// and failed. Reading the socket while idle would notice at once, but
// would make every batch's reader wait on the socket, with its locks and
// deadlines, rather than on the queue. So a batch queued on a connection
// that has taken none for idleCheck first looks, without waiting, whether
// the peer has closed it; if so, the batch goes on a new connection.
// Under load no batch pays the look; after a pause one batch pays one
// syscall.

// idleCheck is how long a connection must have carried nothing before a
// batch checks that the peer has not closed it.
const idleCheck = 20 * time.Millisecond

// errPeerClosed is why a connection the peer closed while idle is dropped.
var errPeerClosed = errors.New("the peer closed the idle connection")

// staleLocked reports whether pc, which has taken no batch for idleCheck
// before one due by deadline, was closed by its peer. Batches' deadlines
// are their queueing times plus the same timeout. pc.mu is held.
func (pc *peerConn) staleLocked(deadline time.Time) bool {
	if pc.raw == nil || deadline.Sub(pc.lastSent) < idleCheck {
		return false
	}
	return peerClosed(pc.raw)
}

// rawOf returns nc's socket, under TLS too, or nil.
func rawOf(nc net.Conn) syscall.RawConn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
