package cluster

import (
	"bufio"
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rlstore/rlstore/internal/wire"
)

// handshake proves that this node holds the cluster's peer key, and checks
// that the peer does too (see Challenge).
func handshake(ctx context.Context, nc net.Conn, cfg PeersConfig) error {
	if len(cfg.key) == 0 {
		return errors.New("handshake: no cluster secret")
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	r := bufio.NewReader(nc)
	ch := Challenge{Name: cfg.Name, DialerNonce: NewNonce()}
	var err error
	ch.ServerNonce, err = roundTrip(nc, r, [][]byte{[]byte(PeerCommand), []byte(PeerHello), []byte(HandshakeVersion),
		[]byte(cfg.Name), []byte(ch.DialerNonce)})
	if err != nil {
		return err
	}
	proof, err := roundTrip(nc, r, [][]byte{[]byte(PeerCommand), []byte(PeerAuth), []byte(ch.DialerMAC(cfg.key))})
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(proof), []byte(ch.ServerMAC(cfg.key))) {
		return errors.New("handshake: the peer did not prove the cluster's secret")
	}
	if r.Buffered() > 0 {
		return errors.New("handshake: unexpected bytes")
	}
	return nil
}

// roundTrip sends one command and returns its simple or bulk reply's text.
func roundTrip(nc net.Conn, r *bufio.Reader, args [][]byte) (string, error) {
	if _, err := nc.Write(wire.AppendCommand(nil, args)); err != nil {
		return "", err
	}
	rep, err := wire.ReadReply(r, nil)
	if err != nil {
		return "", err
	}
	switch rep[0] {
	case '+':
		return string(rep[1 : len(rep)-2]), nil
	case '$':
		i := 0
		for rep[i] != '\n' {
			i++
		}
		if i+1 <= len(rep)-2 { // not a null bulk ($-1), whose header is all there is
			return string(rep[i+1 : len(rep)-2]), nil
		}
	}
	return "", fmt.Errorf("handshake refused: %s", trimCRLF(rep))
}

func trimCRLF(b []byte) string {
	if len(b) >= 2 {
		b = b[:len(b)-2]
	}
	return string(b)
}
