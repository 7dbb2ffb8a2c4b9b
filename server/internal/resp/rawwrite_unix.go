//go:build unix

package resp

import (
	"net"
	"os"
	"syscall"
	"unsafe"
)

// RawWriter writes a connection's replies with a raw write(2) on its
// non-blocking socket, waiting for room through the runtime's poller as
// net.Conn.Write does. What it saves is the runtime's syscall bookkeeping:
// a write marks its P as in a syscall, and one the host keeps from
// finishing for 20 µs (the kernel gave the core to the client the write
// woke) has its P handed to another thread, which must itself wait for a
// core while the goroutines queued on that P wait with it. A write to a
// non-blocking socket never blocks in the kernel, so it need not give its
// P up.
type RawWriter struct {
	rc  syscall.RawConn
	buf []byte
	err error
	fn  func(fd uintptr) bool // w.try, bound once: a method value made per write would allocate
	vec vecWrite              // writeNow's state (writenow_unix.go)
}

// NewRawWriter returns a RawWriter for c, or nil if c has no socket of its
// own (TLS, a test's pipe): such a connection writes through c.Write.
func NewRawWriter(c net.Conn) *RawWriter {
	rc := rawConnOf(c)
	if rc == nil {
		return nil
	}
	w := &RawWriter{rc: rc}
	w.fn, w.vec.fn = w.try, w.tryVec
	return w
}

// rawConnOf returns c's socket for raw reads and writes, or nil if c has
// no socket of its own.
func rawConnOf(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// write writes all of p, waiting while the socket is full.
func (w *RawWriter) Write(p []byte) error {
	w.buf, w.err = p, nil
	err := w.rc.Write(w.fn)
	w.buf = nil
	if err != nil {
		return err
	}
	return w.err
}

// try writes what the socket takes of w.buf, and reports false to wait
// for room if it took less than all of it.
func (w *RawWriter) try(fd uintptr) bool {
	for len(w.buf) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
		switch e {
		case 0:
			w.buf = w.buf[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			w.err = os.NewSyscallError("write", e)
			return true
		}
	}
	return true
}
