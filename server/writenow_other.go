//go:build !linux

package server

import "net"

// writeNow cannot write without waiting on this platform: it writes
// nothing, and leaves every write to a blocking one.
func writeNow(c net.Conn, bufs net.Buffers) (net.Buffers, bool, error) { return bufs, false, nil }
