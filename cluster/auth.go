package cluster

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// The node-to-node handshake, version 2. The node that dials (D) and the
// node it dials (S) each prove that they hold the cluster's peer key, a key
// derived from the cluster's secret with HKDF (PeerKey), never the secret
// itself:
//
//	D: RL.PEER HELLO 2 <name> <nonceD>   S: $<nonceS>
//	D: RL.PEER AUTH <macD>               S: $<macS>, or an error and S closes
//
// macD = HMAC(key, "rlstore peer v2 dialer" 0 name 0 nonceD 0 nonceS), and
// macS the same under "rlstore peer v2 server". Both nonces are 16 fresh
// random bytes in hex, so a recorded handshake proves nothing on another
// connection, and the labels keep one side's proof from passing for the
// other's. S proves itself only after D has: a stranger that dials learns
// nothing but a nonce. A connection gets one HELLO and one AUTH. The
// version is the first argument of HELLO; a node answers one it does not
// speak with ErrHandshakeVersion's words, so versions can be added.
const (
	HandshakeVersion = "2"

	nonceBytes = 16
	macBytes   = sha256.Size

	// MaxPeerName bounds a node name in the handshake.
	MaxPeerName = 255
)

// Handshake errors, worded for the reply that the dialling node sees.
var (
	ErrHandshakeVersion = errors.New("cluster: unsupported peer handshake version")
	ErrHandshakeFrame   = errors.New("cluster: malformed peer handshake")
)

// PeerKey derives the key nodes prove to each other from the cluster's
// secret (a --cluster-key, a --cluster-secret, or PasswordSecret of a
// password). It returns nil for an empty secret: no handshake can succeed
// with it.
func PeerKey(secret []byte) []byte {
	if len(secret) == 0 {
		return nil
	}
	k, err := hkdf.Key(sha256.New, secret, []byte("rlstore cluster"), "rlstore peer handshake v2", 32)
	if err != nil { // only for a length HKDF cannot give
		panic(err)
	}
	return k
}

// PasswordIterations is PBKDF2's work factor in PasswordSecret: a node
// pays it once at start (tens of milliseconds), a guesser for each guess.
const PasswordIterations = 100_000

// PasswordSecret stretches a password (--requirepass, when no key or
// secret is given) into a cluster secret. Someone who records a handshake
// can still test guesses of a weak password offline, at PBKDF2's cost per
// guess; a random --cluster-key or --cluster-secret leaves nothing to guess.
func PasswordSecret(pass string) []byte {
	if pass == "" {
		return nil
	}
	k, err := pbkdf2.Key(sha256.New, pass, []byte("rlstore requirepass cluster secret v1"), PasswordIterations, 32)
	if err != nil {
		panic(err)
	}
	return k
}

// NewNonce returns a fresh nonce for a handshake, in hex.
func NewNonce() string {
	b := make([]byte, nonceBytes)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b)
}

// Challenge is one handshake on the node that was dialled: what HELLO
// said, and the nonce it answered.
type Challenge struct {
	Name        string // the dialling node's name
	DialerNonce string
	ServerNonce string
}

// ParseHello reads RL.PEER HELLO's arguments after the subcommand: the
// version, the name and the dialler's nonce. It answers ServerNonce fresh.
func ParseHello(args [][]byte) (Challenge, error) {
	if len(args) < 1 {
		return Challenge{}, ErrHandshakeFrame
	}
	if string(args[0]) != HandshakeVersion {
		return Challenge{}, ErrHandshakeVersion
	}
	if len(args) != 3 || len(args[1]) == 0 || len(args[1]) > MaxPeerName || !isNonce(args[2]) {
		return Challenge{}, ErrHandshakeFrame
	}
	return Challenge{Name: string(args[1]), DialerNonce: string(args[2]), ServerNonce: NewNonce()}, nil
}

func isNonce(b []byte) bool {
	if len(b) != 2*nonceBytes {
		return false
	}
	_, err := hex.DecodeString(string(b))
	return err == nil
}

// DialerMAC is the dialling node's proof in AUTH.
func (ch Challenge) DialerMAC(key []byte) string { return ch.mac(key, "rlstore peer v2 dialer") }

// ServerMAC is the dialled node's proof, its answer to a good AUTH.
func (ch Challenge) ServerMAC(key []byte) string { return ch.mac(key, "rlstore peer v2 server") }

func (ch Challenge) mac(key []byte, label string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(label))
	for _, s := range []string{ch.Name, ch.DialerNonce, ch.ServerNonce} {
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Verify checks AUTH's proof against each key a node accepts (a keyring
// holds several while keys rotate), in constant time for each. It returns
// the key that matched, for the answer, or nil. An empty key never matches.
func (ch Challenge) Verify(keys [][]byte, mac []byte) []byte {
	if len(mac) != 2*macBytes || ch.ServerNonce == "" {
		return nil
	}
	var found []byte
	for _, k := range keys {
		if len(k) > 0 && hmac.Equal([]byte(ch.DialerMAC(k)), mac) && found == nil {
			found = k
		}
	}
	return found
}
