//go:build unix

package server

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawReader reads a connection's requests with a raw read(2) on its
// non-blocking socket, waiting for bytes through the runtime's poller as
// net.Conn.Read does, for the reason rawWriter writes that way: a read
// does not mark its P as in a syscall, so a read the host holds up does
// not have its P handed to another thread. Each batch takes two reads,
// the one that finds its requests and the one that finds nothing more.
type rawReader struct {
	rc  syscall.RawConn
	buf []byte
	n   int
	err error
	fn  func(fd uintptr) bool // r.try, bound once: a method value made per read would allocate
}

// newRawReader returns a rawReader for c, or nil if c has no socket of its
// own (TLS, a test's pipe): such a connection reads through c.Read.
func newRawReader(c net.Conn) *rawReader {
	rc := rawConnOf(c)
	if rc == nil {
		return nil
	}
	r := &rawReader{rc: rc}
	r.fn = r.try
	return r
}

// read reads into p what the client has sent, waiting until it has sent
// something, the connection's read deadline passes or it closes. It
// returns io.EOF once the client has closed its side, as net.Conn.Read does.
func (r *rawReader) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.buf, r.n, r.err = p, 0, nil
	err := r.rc.Read(r.fn)
	r.buf = nil
	if err != nil {
		return 0, err
	}
	return r.n, r.err
}

// try reads once what the socket holds into r.buf, and reports false to
// wait for bytes if it holds none.
func (r *rawReader) try(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)))
		switch e {
		case 0:
			r.n = int(n)
			if n == 0 {
				r.err = io.EOF
			}
			return true
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			r.err = os.NewSyscallError("read", e)
			return true
		}
	}
}
