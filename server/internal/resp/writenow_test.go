//go:build unix

package resp

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteNowNeverWaits writes far more than a socket holds to a peer
// that is not reading: writeNow must return at once with what it did not
// write, and that rest, written after, must complete the bytes in order.
func TestWriteNowNeverWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	w, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer w.Close()
	r := <-accepted
	require.NotNil(t, r)
	defer r.Close()
	raw := NewRawWriter(w)
	require.NotNil(t, raw, "a TCP connection has a socket of its own")

	var want bytes.Buffer
	var bufs net.Buffers
	for i := range 200 { // 200 × 64 KiB: more than loopback's socket buffers hold
		b := bytes.Repeat([]byte{byte('a' + i%26)}, 64<<10)
		bufs = append(bufs, b)
		want.Write(b)
	}
	rest, err := raw.WriteNow(bufs)
	require.NoError(t, err)
	left := 0
	for _, b := range rest {
		left += len(b)
	}
	require.Positive(t, left, "the socket took everything: the test proves nothing")
	require.Less(t, left, want.Len(), "nothing was written")

	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, int64(want.Len())))
		got <- b
	}()
	_, err = rest.WriteTo(w)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Bytes(), <-got), "the bytes arrived out of order or incomplete")
}

// TestWriteNowAllocatesNothing: writeNow runs once per client batch whose
// replies owners sent back.
func TestWriteNowAllocatesNothing(t *testing.T) {
	server, client := tcpPair(t)
	raw := NewRawWriter(server)
	bufs := net.Buffers{[]byte("+OK\r\n"), []byte(":1\r\n")}
	got := make([]byte, 9)
	allocs := testing.AllocsPerRun(100, func() {
		rest, err := raw.WriteNow(bufs) // whole each time: consume changes nothing then
		if err != nil || len(rest) > 0 {
			panic("short write")
		}
		if _, err := io.ReadFull(client, got); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}
