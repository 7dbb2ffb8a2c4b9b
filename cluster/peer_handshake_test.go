package cluster

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/rlstore/rlstore/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoundTripReplies holds the handshake's reading of whatever answers at
// a peer's address before it has proved the secret: a null bulk, which
// once sliced out of range and took the dialing process down, is a
// refusal like any reply that is not text.
func TestRoundTripReplies(t *testing.T) {
	for _, tc := range []struct {
		reply, want string
		ok          bool
	}{
		{"+OK\r\n", "OK", true},
		{"$3\r\nabc\r\n", "abc", true},
		{"$0\r\n\r\n", "", true},
		{"$-1\r\n", "", false},
		{"*-1\r\n", "", false},
		{"-NOPERM bad cluster credentials\r\n", "", false},
		{":1\r\n", "", false},
	} {
		us, peer := net.Pipe()
		go func() {
			_, _ = io.ReadFull(peer, make([]byte, len(wire.AppendCommand(nil, [][]byte{[]byte("RL.PEER"), []byte("HELLO")}))))
			_, _ = peer.Write([]byte(tc.reply))
		}()
		got, err := roundTrip(us, bufio.NewReader(us), [][]byte{[]byte("RL.PEER"), []byte("HELLO")})
		if tc.ok {
			require.NoError(t, err, "%q", tc.reply)
			assert.Equal(t, tc.want, got, "%q", tc.reply)
		} else {
			assert.Error(t, err, "%q", tc.reply)
		}
		_ = us.Close()
		_ = peer.Close()
	}
}
