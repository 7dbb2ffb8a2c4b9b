//go:build !unix

package server

import "net"

// rawReader is unix-only; elsewhere every connection reads through net.Conn.
type rawReader struct{}

func newRawReader(net.Conn) *rawReader { return nil }

func (*rawReader) read([]byte) (int, error) { return 0, nil }

// stay is never called: newRawReader returns no rawReader here.
func (*rawReader) stay(stayer) error { return nil }

type stayer interface{}
