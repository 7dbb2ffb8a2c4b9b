package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPeersNoAnswerYet: a peer whose port is bound but whose process does
// not serve yet (a restart: the port is bound before the server accepts)
// takes the connection and answers nothing. Its timeout is ErrNoAnswerYet,
// which the server retries as it does a refused connection; before, it was
// a plain timeout, and a quick restart under load failed the other nodes'
// requests for the restarted node's slots (TestQuickRestartUnderLoad).
func TestPeersNoAnswerYet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	p := NewPeers(PeersConfig{Name: "a", Secret: []byte("k"), Timeout: 100 * time.Millisecond})
	defer p.Close()
	_, err = p.Forward(context.Background(), ln.Addr().String(), echoBatch("x", 1))
	require.ErrorIs(t, err, ErrUnreachable)
	assert.ErrorIs(t, err, ErrNoAnswerYet, "no handshake: the peer does not serve yet")
}

// TestPeersSlowAfterAnswerIsATimeout: a peer that answered on the
// connection and then is slow is slow, not starting: a plain timeout.
func TestPeersSlowAfterAnswerIsATimeout(t *testing.T) {
	secret := []byte("k")
	fp := startFakePeer(t, secret)
	p := NewPeers(PeersConfig{Name: "a", Secret: secret, Timeout: 200 * time.Millisecond, Conns: 1})
	defer p.Close()
	_, err := p.Forward(context.Background(), fp.addr, echoBatch("first", 1))
	require.NoError(t, err)
	_, err = p.Forward(context.Background(), fp.addr, [][][]byte{{[]byte("SLOW")}})
	close(fp.release)
	require.ErrorIs(t, err, ErrUnreachable)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ErrNoAnswerYet)
}
