package resp

import (
	"io"
	"net"
)

// readNowFallback is ReadNow for connections without a file descriptor:
// it cannot look without waiting, so it reports nothing more to read.
func readNowFallback() (int, error) { return 0, io.EOF }

// Consume drops the first n bytes of bufs.
func Consume(bufs net.Buffers, n int64) net.Buffers {
	for len(bufs) > 0 && n >= int64(len(bufs[0])) {
		n -= int64(len(bufs[0]))
		bufs = bufs[1:]
	}
	if len(bufs) > 0 && n > 0 {
		bufs[0] = bufs[0][n:]
	}
	return bufs
}
