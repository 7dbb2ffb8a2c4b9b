package cluster

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodeMeta(t *testing.T) {
	for _, n := range []Node{{Name: "a", Addr: "127.0.0.1:6379"}, {Name: "b", Addr: "127.0.0.1:6379", TLSAddr: "127.0.0.1:6380"}} {
		assert.Equal(t, n, nodeFromMeta(n.Name, encodeMeta(n)))
	}
	assert.Equal(t, []byte("127.0.0.1:6379"), encodeMeta(Node{Addr: "127.0.0.1:6379"}), "as before --tls-cluster")
	v := &View{Members: []Member{{Node: Node{Name: "a", Addr: "h:1", TLSAddr: "h:2"}}, {Node: Node{Name: "b", Addr: "h:3"}}}}
	got, ok := v.TLSAddr("h:1")
	assert.True(t, ok)
	assert.Equal(t, "h:2", got)
	_, ok = v.TLSAddr("h:3")
	assert.False(t, ok, "a member with no TLS port")
	_, ok = v.TLSAddr("h:9")
	assert.False(t, ok, "no such member")
}

// TestPeersTLSNoPlainFallback: with TLS on, a peer that advertises no TLS
// port is not dialled in plain text, though its plain port would answer.
func TestPeersTLSNoPlainFallback(t *testing.T) {
	fp := startFakePeer(t, []byte("s"))
	p := NewPeers(PeersConfig{Name: "n", Secret: []byte("s"), TLS: func() *tls.Config { return &tls.Config{} },
		TLSAddr: func(string) (string, bool) { return "", false }})
	t.Cleanup(p.Close)
	_, err := p.Forward(context.Background(), fp.addr, [][][]byte{{[]byte("ECHO"), []byte("x")}})
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Contains(t, err.Error(), "no TLS port")
}
