//go:build !unix

package resp

import "net"

// RawWriter is unix-only; elsewhere every connection writes through net.Conn.
type RawWriter struct{}

func NewRawWriter(net.Conn) *RawWriter { return nil }

func (*RawWriter) Write([]byte) error { return nil }

func (*RawWriter) WriteNow(bufs net.Buffers) (net.Buffers, error) { return bufs, nil }
