//go:build unix

package cluster

import "syscall"

// peerClosed reports whether the peer has closed rc's connection: a read
// that does not wait, and leaves the bytes, finds its end. Control does not
// take the socket's read lock, which the reader may hold, waiting for a
// batch's replies.
func peerClosed(rc syscall.RawConn) bool {
	closed := false
	_ = rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err == syscall.ECONNRESET
	})
	return closed
}
