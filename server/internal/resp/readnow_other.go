//go:build !unix

package resp

import "net"

// ReadNow cannot read without waiting on this platform: it reports nothing to read.
func ReadNow(c net.Conn, p []byte) (int, error) { return readNowFallback() }
