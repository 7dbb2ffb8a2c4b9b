package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// The node-to-node handshake. A node opening a connection to a peer's
// RESP port sends PeerHello with its name; the peer answers a fresh random
// nonce; the node sends PeerAuth with its name and PeerMAC of the nonce.
// A peer that checks the MAC with VerifyPeer treats the connection as a
// node's: it may carry hop-marked requests and slot handoffs. The nonce
// makes a recorded handshake useless on another connection.
const (
	PeerCommand = "RL.PEER" // PEER HELLO name, then PEER AUTH name mac
)

// NewNonce returns a fresh nonce for a handshake.
func NewNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b)
}

// PeerMAC is the proof that the node called name holds secret.
func PeerMAC(secret []byte, nonce, name string) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(nonce))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return hex.EncodeToString(h.Sum(nil))
}

// VerifyPeer checks a handshake's MAC in constant time.
func VerifyPeer(secret []byte, nonce, name, mac string) bool {
	return hmac.Equal([]byte(PeerMAC(secret, nonce, name)), []byte(mac))
}
