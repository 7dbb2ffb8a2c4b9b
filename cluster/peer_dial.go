package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// dial connects and proves the secret, then starts the reader and the
// writer, which sends what was queued meanwhile. A failure fails every
// batch queued.
func (pc *peerConn) dial(addr string, cfg PeersConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	nc, err := dialConn(ctx, addr, cfg)
	if err == nil {
		if err = handshake(ctx, nc, cfg); err != nil {
			_ = nc.Close()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("%w: %w", ErrNoAnswerYet, err)
		}
	}
	pc.mu.Lock()
	switch {
	case err != nil:
		pc.failLocked(err)
	case pc.err != nil: // closed while it dialled
		_ = nc.Close()
	default:
		pc.nc, pc.raw = nc, rawOf(nc)
		pc.fairFrom = time.Now().Add(cfg.Timeout / 2)
	}
	pc.mu.Unlock()
	if pc.nc == nil {
		pc.failAll()
		return
	}
	go pc.writeLoop()
	pc.readLoop(bufio.NewReaderSize(nc, 64<<10))
}

// dialConn dials addr, over TLS to its TLS address when cfg says so.
func dialConn(ctx context.Context, addr string, cfg PeersConfig) (net.Conn, error) {
	if cfg.TLS == nil {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	taddr, ok := "", false
	if cfg.TLSAddr != nil {
		taddr, ok = cfg.TLSAddr(addr)
	}
	if !ok || taddr == "" {
		return nil, errors.New("the peer advertises no TLS port (--tls-cluster needs --tls-port on every node)")
	}
	tc := cfg.TLS().Clone()
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(taddr)
	}
	d := tls.Dialer{Config: tc}
	return d.DialContext(ctx, "tcp", taddr)
}
