package inproc

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemPipe: the gateway's in-memory connection carries bytes both ways
// without a writer waiting for its reader, and ends a read as a socket
// does: at a read deadline (a drain's, which must wake a waiting read), at
// close (after what was written before it), and at the call's context.
func TestMemPipe(t *testing.T) {
	p := newMemPipe()
	big := make([]byte, 1<<20)
	n, err := p.gatewayWrite(big) // nobody reads yet: it must not wait
	require.NoError(t, err)
	require.Equal(t, len(big), n)
	got := 0
	buf := make([]byte, 64<<10)
	for got < len(big) {
		n, err := p.server.Read(buf)
		require.NoError(t, err)
		got += n
	}

	woke := make(chan error, 1)
	go func() {
		_, err := p.server.Read(buf)
		woke <- err
	}()
	require.NoError(t, p.server.SetReadDeadline(time.Unix(1, 0))) // as a drain does (resp.Guard)
	assert.ErrorIs(t, <-woke, os.ErrDeadlineExceeded, "a passed deadline wakes a waiting read")
	require.NoError(t, p.server.SetReadDeadline(time.Time{}))
	_, err = p.gatewayWrite([]byte("PING"))
	require.NoError(t, err)
	n, err = p.server.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "PING", string(buf[:n]), "a cleared deadline reads again")

	require.NoError(t, p.server.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = p.server.Read(buf)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "a deadline in the future ends the read when it passes")
	require.NoError(t, p.server.SetReadDeadline(time.Time{}))

	_, err = p.server.Write([]byte("+PONG\r\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	n, err = p.gatewayRead(ctx, buf)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", string(buf[:n]))
	cancel()
	_, err = p.gatewayRead(ctx, buf)
	assert.ErrorIs(t, err, context.Canceled, "the call's context ends the gateway's read")

	_, err = p.server.Write([]byte("+LAST\r\n"))
	require.NoError(t, err)
	require.NoError(t, p.server.Close())
	n, err = p.gatewayRead(context.Background(), buf)
	require.NoError(t, err)
	assert.Equal(t, "+LAST\r\n", string(buf[:n]), "what was written before the close is read")
	_, err = p.gatewayRead(context.Background(), buf)
	assert.ErrorIs(t, err, io.EOF)
	_, err = p.server.Read(buf)
	assert.ErrorIs(t, err, io.EOF)
	_, err = p.gatewayWrite([]byte("x"))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
}

func TestParseReplyInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-5", -5, true}, {"4611686018427387904", 1 << 62, true},
		{"9223372036854775807", 1<<63 - 1, true}, {"-9223372036854775807", -(1<<63 - 1), true},
		{"9223372036854775808", 0, false}, {"", 0, false}, {"-", 0, false}, {"1a", 0, false},
		{"12345678901234567890", 0, false},
	} {
		v, ok := parseReplyInt([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, "parseReplyInt(%q)", tc.in)
		if tc.ok {
			assert.Equal(t, tc.want, v, "parseReplyInt(%q)", tc.in)
		}
	}
}
