//go:build !unix

package resp

import "net"

// RawReader is unix-only; elsewhere every connection reads through net.Conn.
type RawReader struct{}

func NewRawReader(net.Conn) *RawReader { return nil }

func (*RawReader) Read([]byte) (int, error) { return 0, nil }

// stay is never called: NewRawReader returns no RawReader here.
func (*RawReader) Stay(Stayer) error { return nil }

type Stayer interface{}
