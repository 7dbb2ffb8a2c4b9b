//go:build unix

package resp

import (
	"net"
	"syscall"
)

// ReadNow reads what c's socket already holds without waiting, or reports
// io.EOF if it holds nothing. A drain uses it to take a request that arrived
// just as its deadline passed.
func ReadNow(c net.Conn, p []byte) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return readNowFallback()
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return readNowFallback()
	}
	n, rerr := 0, error(nil)
	err = rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), p)
		return true // done, whatever happened: never wait for readiness
	})
	if err != nil || rerr != nil || n <= 0 {
		return readNowFallback()
	}
	return n, nil
}
