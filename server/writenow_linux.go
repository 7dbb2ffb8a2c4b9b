//go:build linux

package server

import (
	"net"
	"syscall"
	"unsafe"
)

// writeNow writes as much of bufs to c as its socket takes at once, with
// one writev that never waits, and returns what it did not write. It
// reports ok false, having written nothing, for a connection without a
// socket of its own (TLS, a pipe in tests): then only a blocking write will
// do.
func writeNow(c net.Conn, bufs net.Buffers) (rest net.Buffers, ok bool, err error) {
	raw := rawConnOf(c)
	if raw == nil {
		return bufs, false, nil
	}
	var iov [writeNowIovecs]syscall.Iovec
	n := 0
	for _, b := range bufs {
		if n == len(iov) {
			break
		}
		if len(b) > 0 {
			iov[n].Base = &b[0]
			iov[n].SetLen(len(b))
			n++
		}
	}
	if n == 0 {
		return nil, true, nil
	}
	var wrote uintptr
	var errno syscall.Errno
	if err := raw.Write(func(fd uintptr) bool {
		// Raw, as rawWriter's write: a non-blocking writev never waits in
		// the kernel, so its P need not be marked as in a syscall.
		wrote, _, errno = syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
		return true // one try: never wait for room
	}); err != nil {
		return bufs, true, err
	}
	switch errno {
	case 0:
	case syscall.EAGAIN, syscall.EINTR:
		return bufs, true, nil
	default:
		return bufs, true, errno
	}
	return consume(bufs, int64(wrote)), true, nil
}

// writeNowIovecs bounds the buffers one writeNow sends; the rest are left
// for the blocking write.
const writeNowIovecs = 64
