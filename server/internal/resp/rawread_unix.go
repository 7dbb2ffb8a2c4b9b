//go:build unix

package resp

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// RawReader reads a connection's requests with a raw read(2) on its
// non-blocking socket, waiting for bytes through the runtime's poller as
// net.Conn.Read does, for the reason RawWriter writes that way: a read
// does not mark its P as in a syscall, so a read the host holds up does
// not have its P handed to another thread. A read (read) first reads,
// and waits only if it found nothing: the poller forgets, as each wait
// begins, what it reported before. Between batches a connection waits in
// stay instead, which needs no read that finds nothing.
type RawReader struct {
	rc  syscall.RawConn
	buf []byte
	n   int
	err error
	fn  func(fd uintptr) bool // r.try, bound once: a method value made per read would allocate
}

// NewRawReader returns a RawReader for c, or nil if c has no socket of its
// own (TLS, a test's pipe): such a connection reads through c.Read.
func NewRawReader(c net.Conn) *RawReader {
	rc := rawConnOf(c)
	if rc == nil {
		return nil
	}
	r := &RawReader{rc: rc}
	r.fn = r.try
	return r
}

// read reads into p what the client has sent, waiting until it has sent
// something, the connection's read deadline passes or it closes. It
// returns io.EOF once the client has closed its side, as net.Conn.Read does.
func (r *RawReader) Read(p []byte) (int, error) {
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
func (r *RawReader) try(fd uintptr) bool {
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

// Stayer is what stay reads for: the connection's batches (batcher).
type Stayer interface {
	Room() []byte   // where the next read goes; never empty
	Got(n int) bool // runs the n bytes read into room; false: stay returns
	Next() bool     // before each further read or wait; false: stay returns instead
}

// stay reads the connection's requests and hands each read to st, for as
// long as st goes on, inside one wait for the socket. That saves read's
// second read, the one that finds nothing, on every batch: a read that
// returns less than room had space for emptied the socket, and bytes that
// arrive after it wake the wait, since the runtime's poller reports each
// arrival and only a new wait (read's) forgets what it reported before.
// The cost is that the socket is held, and closing it waits, while st
// runs: Guard.Close closes it without waiting.
//
// stay returns nil once st has asked it to; otherwise why it ended: the
// client closed its side (io.EOF), a read failed, or the wait did (the
// socket was closed, or its read deadline passed).
func (r *RawReader) Stay(st Stayer) error {
	var err error
	werr := r.rc.Read(func(fd uintptr) bool {
		for {
			p := st.Room()
			n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case 0:
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return !st.Next()
			default:
				err = os.NewSyscallError("read", e)
				return true
			}
			if n == 0 {
				err = io.EOF
				return true
			}
			if !st.Got(int(n)) || !st.Next() {
				return true
			}
			if int(n) < len(p) {
				return false // wait
			}
		}
	})
	if err != nil {
		return err
	}
	return werr
}
