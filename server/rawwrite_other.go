//go:build !unix

package server

import "net"

// rawWriter is unix-only; elsewhere every connection writes through net.Conn.
type rawWriter struct{}

func newRawWriter(net.Conn) *rawWriter { return nil }

func (*rawWriter) write([]byte) error { return nil }

func (*rawWriter) writeNow(bufs net.Buffers) (net.Buffers, error) { return bufs, nil }
