package cluster

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPeerKeyNeverTheSecret(t *testing.T) {
	assert.Nil(t, PeerKey(nil), "an empty secret gives no key")
	k := PeerKey([]byte("s3cret"))
	assert.Len(t, k, 32)
	assert.NotEqual(t, PeerKey([]byte("s3cret!")), k)
	assert.NotContains(t, string(k), "s3cret")
	assert.Nil(t, PasswordSecret(""))
	assert.Equal(t, PasswordSecret("pw"), PasswordSecret("pw"), "every node derives the same from one password")
}

func TestChallengeProofs(t *testing.T) {
	key := PeerKey([]byte("k"))
	ch, err := ParseHello([][]byte{[]byte(HandshakeVersion), []byte("a"), []byte(NewNonce())})
	require.NoError(t, err)
	assert.Equal(t, key, ch.Verify([][]byte{PeerKey([]byte("old")), key}, []byte(ch.DialerMAC(key))), "any key of a keyring")
	assert.Nil(t, ch.Verify([][]byte{key}, []byte(ch.ServerMAC(key))), "the node's proof does not pass for the dialler's")
	assert.Nil(t, ch.Verify([][]byte{nil}, []byte(ch.DialerMAC(nil))), "an empty key never matches")
	_, err = ParseHello([][]byte{[]byte("1"), []byte("a"), []byte(NewNonce())})
	assert.ErrorIs(t, err, ErrHandshakeVersion)
	_, err = ParseHello([][]byte{[]byte(HandshakeVersion), []byte("a"), []byte("short")})
	assert.ErrorIs(t, err, ErrHandshakeFrame)
}

// FuzzPeerHandshake reads the fuzz bytes as HELLO's arguments (split at
// NUL) and a proof: parsing never panics, and no proof but the dialler's
// right one verifies.
func FuzzPeerHandshake(f *testing.F) {
	f.Add([]byte("2\x00a\x0000112233445566778899aabbccddeeff"), []byte("00"))
	f.Add([]byte("2\x00\x00"), []byte{})
	f.Add([]byte("1\x00node"), []byte("x"))
	key := PeerKey([]byte("fuzz"))
	f.Fuzz(func(t *testing.T, hello, mac []byte) {
		ch, err := ParseHello(bytes.Split(hello, []byte{0}))
		if err != nil {
			return
		}
		right := ch.DialerMAC(key)
		if string(mac) != right && ch.Verify([][]byte{key}, mac) != nil {
			t.Fatalf("a proof %q verified that is not the dialler's", mac)
		}
		if ch.Verify([][]byte{key}, []byte(right)) == nil {
			t.Fatal("the right proof did not verify")
		}
	})
}
