package route

import (
	"errors"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// The node-to-node handshake's side on the node that is dialled (see
// cluster.Challenge). A connection gets one HELLO and one AUTH: a failure
// at either closes it. The brute-force guard counts the handshake as a
// user of its own (auth.PeerUser, through Gate) at the client's address: a handshake from an
// address that must wait is refused unchecked, as is one from an address
// locked out for every user, and a wrong proof counts toward both.

// Replies of the handshake.
const (
	errPeerVersion = "NOPERM unsupported peer handshake version (this node speaks " + cluster.HandshakeVersion + ")"
	errPeerFrame   = "NOPERM malformed peer handshake"
)

// peerHello is RL.PEER HELLO version name nonce: it answers a fresh nonce.
func (rt *Router) peerHello(x *core.Session, c *Conn, args [][]byte) {
	if c.shake != nil {
		rt.peerRefused(x, errPeerAuth)
		return
	}
	now := rt.clock()
	if reply := rt.gate.Blocked(x.Addr, now); reply != "" {
		rt.gate.CountFailure()
		x.Out.WriteError(reply)
		rt.conns.CloseAfterReply(x)
		return
	}
	ch, err := cluster.ParseHello(args[2:])
	if err != nil {
		rt.gate.Failed(x.Addr, now)
		reply := errPeerFrame
		if errors.Is(err, cluster.ErrHandshakeVersion) {
			reply = errPeerVersion
		}
		rt.peerRefused(x, reply)
		return
	}
	c.shake = &ch
	x.Out.WriteBulkString(ch.ServerNonce)
}

// peerAuth is RL.PEER AUTH mac: with the right proof it answers the node's
// own and makes the connection a peer's.
func (rt *Router) peerAuth(x *core.Session, c *Conn, args [][]byte) {
	ch := c.shake
	now := rt.clock()
	// The try is counted here, where a secret is checked, not at HELLO: a
	// node whose dials time out against a stopped peer leaves HELLOs
	// behind that are no guesses. It is not held like AUTH (a node dials
	// with --cluster-timeout to finish): one try per connection, and the
	// limit, bound guessing.
	if reply := rt.gate.Admit(x.Addr, now); reply != "" {
		rt.peerRefused(x, reply)
		return
	}
	var key []byte
	if ch != nil && len(args) == 3 {
		key = ch.Verify(rt.peerKeys(), args[2])
	}
	if key == nil {
		rt.gate.Failed(x.Addr, now)
		rt.peerRefused(x, errPeerAuth)
		return
	}
	rt.gate.Passed(x.Addr)
	c.shake = &cluster.Challenge{} // spent: a second AUTH finds no nonce
	// No user: the node that accepted a forwarded request checked its
	// client's rights already (TestACLOverForwarding).
	x.Peer, c.peerName = true, ch.Name
	rt.gate.Login(x)
	x.Conn.Widen(peerReadBuf, peerMaxRequest)
	x.Out.WriteBulkString(ch.ServerMAC(key))
}

// peerRefused ends a failed handshake: the reply, then the connection.
func (rt *Router) peerRefused(x *core.Session, reply string) {
	rt.gate.CountFailure()
	rt.log.Debug("refused a peer handshake", "client", x.ID, "addr", x.Addr, "reply", reply)
	x.Out.WriteError(reply)
	rt.conns.CloseAfterReply(x)
}

// peerKeys are the keys a peer handshake may prove: the cluster's, or the regions'.
func (rt *Router) peerKeys() [][]byte {
	if rt.on {
		return rt.keys
	}
	if rt.regions.Regional() {
		return rt.regions.Keys()
	}
	return nil
}
