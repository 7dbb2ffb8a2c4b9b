//go:build unix

package resp

import (
	"net"
	"os"
	"syscall"
	"unsafe"
)

// vecWrite is a RawWriter's state for writeNow, kept so that a writeNow
// allocates nothing.
type vecWrite struct {
	iov   [writeNowIovecs]syscall.Iovec
	n     int // entries of iov in use
	wrote int
	err   error
	fn    func(fd uintptr) bool // w.tryVec, bound once
}

// writeNowIovecs bounds the buffers one writeNow sends; the rest are left
// for a blocking write.
const writeNowIovecs = 64

// writeNow writes as much of bufs as the socket takes at once, with one
// writev that never waits, and returns what it did not write.
func (w *RawWriter) WriteNow(bufs net.Buffers) (net.Buffers, error) {
	v := &w.vec
	v.n, v.wrote, v.err = 0, 0, nil
	for _, b := range bufs {
		if v.n == len(v.iov) {
			break
		}
		if len(b) > 0 {
			v.iov[v.n].Base = &b[0]
			v.iov[v.n].SetLen(len(b))
			v.n++
		}
	}
	if v.n == 0 {
		return nil, nil
	}
	err := w.rc.Write(v.fn)
	clear(v.iov[:v.n]) // keep no reply alive
	switch {
	case err != nil:
		return bufs, err
	case v.err != nil:
		return bufs, v.err
	}
	return Consume(bufs, int64(v.wrote)), nil
}

// tryVec makes writeNow's one writev. It is raw, as try's write is: a
// non-blocking writev never waits in the kernel.
func (w *RawWriter) tryVec(fd uintptr) bool {
	v := &w.vec
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&v.iov[0])), uintptr(v.n))
	switch e {
	case 0:
		v.wrote = int(n)
	case syscall.EAGAIN, syscall.EINTR:
	default:
		v.err = os.NewSyscallError("writev", e)
	}
	return true // one try: never wait for room
}
