package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peerHello sends RL.PEER HELLO 2 name nonce on c and returns the
// challenge as the dialling node knows it, or the error line.
func peerHello(t *testing.T, c *rawConn, name, nonce string) (cluster.Challenge, string) {
	t.Helper()
	c.send(t, respCmd("RL.PEER", "HELLO", cluster.HandshakeVersion, name, nonce))
	ch := cluster.Challenge{Name: name, DialerNonce: nonce}
	h := c.line(t)
	if !strings.HasPrefix(h, "$") {
		return ch, h
	}
	ch.ServerNonce = c.bulkAfter(t, h)
	return ch, ""
}

// handshakeNode is one node of a cluster with secret "right", whose
// clients need the password "pw", and whose guard allows 2 wrong tries
// per user and address (6 per address) on a clock that stands still.
func handshakeNode(t *testing.T) *testNode {
	clock := newFakeClock(time.Unix(1_700_000_000, 0))
	return startTestCluster(t, 1, clusterOpts{secret: []byte("right"), config: func(c *Config) {
		c.RequirePass, c.AuthFailLimit, c.AuthFailWindow, c.Clock = "pw", 2, time.Second, clock.Now
	}})[0]
}

// TestPeerHandshake: only a node that holds the cluster's secret becomes a
// peer; every failed try is answered once, closes its connection and
// counts toward the brute-force guard.
func TestPeerHandshake(t *testing.T) {
	right, wrong := cluster.PeerKey([]byte("right")), cluster.PeerKey([]byte("wrong"))
	cases := []struct {
		name string
		try  func(t *testing.T, addr string) (*rawConn, string) // the connection and the last reply line
		want string                                             // the reply's prefix
	}{
		{"right secret", func(t *testing.T, addr string) (*rawConn, string) {
			c := dialRaw(t, addr)
			ch, _ := peerHello(t, c, "a", cluster.NewNonce())
			c.send(t, respCmd("RL.PEER", "AUTH", ch.DialerMAC(right)))
			assert.Equal(t, ch.ServerMAC(right), c.bulk(t), "the node proves the secret back")
			c.send(t, respCmd("RL.HOP", "1", "2", "PING"))
			return c, c.line(t)
		}, "+PONG"},
		{"wrong secret", authWith(wrong, "a"), "-NOPERM bad cluster credentials"},
		{"empty secret", authWith(nil, "a"), "-NOPERM bad cluster credentials"},
		{"MAC for another node name", authWith(right, "b"), "-NOPERM bad cluster credentials"},
		{"replayed nonce and MAC", func(t *testing.T, addr string) (*rawConn, string) {
			first := dialRaw(t, addr)
			nonce := cluster.NewNonce()
			ch, _ := peerHello(t, first, "a", nonce)
			mac := ch.DialerMAC(right)
			first.send(t, respCmd("RL.PEER", "AUTH", mac))
			first.bulk(t)
			c := dialRaw(t, addr)
			_, e := peerHello(t, c, "a", nonce)
			require.Empty(t, e)
			c.send(t, respCmd("RL.PEER", "AUTH", mac))
			return c, c.line(t)
		}, "-NOPERM bad cluster credentials"},
		{"second attempt on the connection", func(t *testing.T, addr string) (*rawConn, string) {
			c := dialRaw(t, addr)
			ch, _ := peerHello(t, c, "a", cluster.NewNonce())
			c.send(t, respCmd("RL.PEER", "AUTH", ch.DialerMAC(wrong))+respCmd("RL.PEER", "AUTH", ch.DialerMAC(right)))
			return c, c.line(t) // the first, and then the connection ends
		}, "-NOPERM bad cluster credentials"},
		{"second HELLO on the connection", func(t *testing.T, addr string) (*rawConn, string) {
			c := dialRaw(t, addr)
			peerHello(t, c, "a", cluster.NewNonce())
			_, e := peerHello(t, c, "a", cluster.NewNonce())
			return c, e
		}, "-NOPERM bad cluster credentials"},
		{"AUTH without HELLO", func(t *testing.T, addr string) (*rawConn, string) {
			c := dialRaw(t, addr)
			c.send(t, respCmd("RL.PEER", "AUTH", strings.Repeat("0", 64)))
			return c, c.line(t)
		}, "-NOPERM bad cluster credentials"},
		{"version 1", func(t *testing.T, addr string) (*rawConn, string) {
			c := dialRaw(t, addr)
			c.send(t, respCmd("RL.PEER", "HELLO", "a"))
			return c, c.line(t)
		}, "-NOPERM unsupported peer handshake version"},
		{"locked-out address", func(t *testing.T, addr string) (*rawConn, string) {
			for i := range 6 { // wrong passwords for 6 users: the address's whole allowance
				c := dialRaw(t, addr)
				c.send(t, respCmd("AUTH", fmt.Sprint("user", i), "guess"))
				require.Equal(t, "-"+auth.ErrWrongPass, c.line(t))
			}
			c := dialRaw(t, addr)
			_, e := peerHello(t, c, "a", cluster.NewNonce())
			return c, e
		}, "-WRONGPASS too many wrong passwords from this address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := handshakeNode(t)
			c, got := tc.try(t, n.addr)
			assert.True(t, strings.HasPrefix(got, tc.want), "reply %q, want %q", got, tc.want)
			if tc.want == "+PONG" {
				return
			}
			assert.True(t, c.closedByServer(t), "a failed handshake closes its connection")
			assert.Positive(t, n.srv.users.Failures(), "and counts as an authentication failure")
		})
	}
}

// authWith does HELLO as node a, then AUTH with a MAC by key for the name given.
func authWith(key []byte, macName string) func(t *testing.T, addr string) (*rawConn, string) {
	return func(t *testing.T, addr string) (*rawConn, string) {
		c := dialRaw(t, addr)
		ch, e := peerHello(t, c, "a", cluster.NewNonce())
		require.Empty(t, e)
		ch.Name = macName
		c.send(t, respCmd("RL.PEER", "AUTH", ch.DialerMAC(key)))
		return c, c.line(t)
	}
}

// TestPeerHandshakeGuard: wrong handshakes count toward the guard as AUTH's
// wrong passwords do: past the limit even the right secret is refused
// unchecked, and an address that fails the handshake is slowed first.
func TestPeerHandshakeGuard(t *testing.T) {
	n := handshakeNode(t)
	wrong := cluster.PeerKey([]byte("wrong"))
	for range 2 {
		c := dialRaw(t, n.addr)
		ch, e := peerHello(t, c, "a", cluster.NewNonce())
		require.Empty(t, e)
		c.send(t, respCmd("RL.PEER", "AUTH", ch.DialerMAC(wrong)))
		require.Equal(t, "-"+route.ErrPeerAuth, c.line(t))
	}
	c := dialRaw(t, n.addr)
	_, e := peerHello(t, c, "a", cluster.NewNonce())
	assert.True(t, strings.HasPrefix(e, "-WRONGPASS too many wrong passwords"), e)
	assert.True(t, c.closedByServer(t))
	right := cluster.NewPeers(cluster.PeersConfig{Name: "a", Secret: []byte("right")})
	defer right.Close()
	_, err := right.Forward(ctxT(t), n.addr, [][][]byte{{[]byte("PING")}})
	require.ErrorIs(t, err, cluster.ErrUnreachable, "the right secret from a locked-out address is refused unchecked")
	assert.Contains(t, err.Error(), "too many wrong passwords")
	cl := newClient(t, n.addr, 2)
	require.NoError(t, cl.Do(ctxT(t), "AUTH", "pw").Err(), "the handshake's lockout is its own: AUTH as a user still works")
}
