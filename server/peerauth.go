package server

import (
	"errors"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/auth"
)

// The node-to-node handshake's side on the node that is dialled (see
// cluster.Challenge). A connection gets one HELLO and one AUTH: a failure
// at either closes it. The brute-force guard counts the handshake as a
// user of its own (auth.PeerUser) at the client's address: a handshake from an
// address that must wait is refused unchecked, as is one from an address
// locked out for every user, and a wrong proof counts toward both.

// Replies of the handshake.
const (
	errPeerVersion = "NOPERM unsupported peer handshake version (this node speaks " + cluster.HandshakeVersion + ")"
	errPeerFrame   = "NOPERM malformed peer handshake"
)

// peerHello is RL.PEER HELLO version name nonce: it answers a fresh nonce.
func (s *Server) peerHello(c *client, args [][]byte) {
	if c.shake != nil {
		s.peerRefused(c, errPeerAuth)
		return
	}
	now := s.cfg.Clock()
	if wait := s.guard.Blocked(c.Addr, auth.PeerUser, now); wait > 0 {
		s.users.CountFailure()
		c.conn.WriteError(auth.BlockedReply(wait))
		s.closeAfterReply(c)
		return
	}
	ch, err := cluster.ParseHello(args[2:])
	if err != nil {
		s.guard.Failed(c.Addr, now)
		reply := errPeerFrame
		if errors.Is(err, cluster.ErrHandshakeVersion) {
			reply = errPeerVersion
		}
		s.peerRefused(c, reply)
		return
	}
	c.shake = &ch
	c.conn.WriteBulkString(ch.ServerNonce)
}

// peerAuth is RL.PEER AUTH mac: with the right proof it answers the node's
// own and makes the connection a peer's.
func (s *Server) peerAuth(c *client, args [][]byte) {
	ch := c.shake
	now := s.cfg.Clock()
	// The try is counted here, where a secret is checked, not at HELLO: a
	// node whose dials time out against a stopped peer leaves HELLOs
	// behind that are no guesses. It is not held like AUTH (a node dials
	// with --cluster-timeout to finish): one try per connection, and the
	// limit, bound guessing.
	if _, wait := s.guard.Admit(c.Addr, auth.PeerUser, now); wait > 0 {
		s.peerRefused(c, auth.BlockedReply(wait))
		return
	}
	var key []byte
	if ch != nil && len(args) == 3 {
		key = ch.Verify(s.peerKeys(), args[2])
	}
	if key == nil {
		s.guard.Failed(c.Addr, now)
		s.peerRefused(c, errPeerAuth)
		return
	}
	s.guard.Passed(c.Addr, auth.PeerUser)
	c.shake = &cluster.Challenge{} // spent: a second AUTH finds no nonce
	// No user: the node that accepted a forwarded request checked its
	// client's rights already (TestACLOverForwarding).
	c.Peer, c.peerName = true, ch.Name
	s.users.Login(&c.Session, nil)
	c.Conn.Widen(peerReadBuf, peerMaxRequest)
	c.conn.WriteBulkString(ch.ServerMAC(key))
}

// peerRefused ends a failed handshake: the reply, then the connection.
func (s *Server) peerRefused(c *client, reply string) {
	s.users.CountFailure()
	s.log.Debug("refused a peer handshake", "client", c.ID, "addr", c.Addr, "reply", reply)
	c.conn.WriteError(reply)
	s.closeAfterReply(c)
}
