package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/internal/wire"
)

// Forwarder sends batches of commands to the node whose RESP port is at
// addr. The server forwards through this interface, so tests and other
// transports can stand in for Peers.
type Forwarder interface {
	// Forward sends cmds and waits for each reply's raw RESP bytes, in order.
	Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error)
	// Send queues n commands, already encoded as RESP in payload, and
	// returns at once; r gets their replies later, from another goroutine.
	// Batches given the same lane reach the peer in the order they were
	// sent, and are run there in that order.
	Send(addr string, lane uint64, payload []byte, n int, r Replier)
}

// Replier receives a batch's replies: each one's raw RESP bytes, in order,
// or an error wrapping ErrUnreachable. Replies is called exactly once,
// and must not wait long: it runs on the connection's reader.
type Replier interface {
	Replies(replies [][]byte, err error)
}

// ErrUnreachable wraps every failure to get replies from a peer: it could
// not be dialled, refused the handshake, broke the connection, or did not
// answer in time.
var ErrUnreachable = errors.New("cluster: peer unreachable")

// PeersConfig configures Peers.
type PeersConfig struct {
	Name    string        // this node's name, sent in the handshake
	Secret  []byte        // the cluster's shared secret; the handshake proves its PeerKey
	Conns   int           // connections kept to each peer. Default DefaultPeerConns
	Timeout time.Duration // how long a batch (or a dial) may take. Default DefaultPeerTimeout

	// TLS, if set, makes every connection TLS (--tls-cluster): it is called
	// for each dial, so reloaded certificates reach new connections, and
	// the handshake above runs inside the TLS session. TLSAddr then maps
	// the peer's RESP address, the one Forward is given, to the TLS address
	// to dial; one it cannot map is not dialled in plain text but fails.
	TLS     func() *tls.Config
	TLSAddr func(respAddr string) (string, bool)

	key []byte // PeerKey(Secret), set by NewPeers
}

// The defaults of PeersConfig.
const (
	DefaultPeerConns   = 2
	DefaultPeerTimeout = time.Second
)

// Peers holds a few persistent, pipelined connections to each peer.
// Batches from many goroutines share them: each batch is appended whole
// to its connection's output, a writer sends everything queued since its
// last write in one write, and a reader hands replies back in the order
// batches were queued. It is safe for concurrent use.
//
// Its parts: the pool (Peers, here), dialing (peer_dial.go), the secret's
// handshake (peer_handshake.go), the connection and its writer
// (peer_conn.go), its reader (peer_read.go), and the look for a peer that
// closed an idle connection (peer_alive.go).
type Peers struct {
	cfg  PeersConfig
	mu   sync.Mutex // guards pool and closed
	pool map[string][]*peerConn
	next atomic.Uint64
	shut bool
}

// NewPeers returns an empty pool; connections are made on first use.
func NewPeers(cfg PeersConfig) *Peers {
	if cfg.Conns <= 0 {
		cfg.Conns = DefaultPeerConns
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultPeerTimeout
	}
	cfg.key = PeerKey(cfg.Secret)
	return &Peers{cfg: cfg, pool: map[string][]*peerConn{}}
}

// Forward implements Forwarder. A batch that fails or times out fails
// whole, with an error wrapping ErrUnreachable, and the connection it used
// is dropped: its later replies could no longer be matched.
func (p *Peers) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	payload := make([]byte, 0, wire.CommandsSize(cmds))
	for _, args := range cmds {
		payload = wire.AppendCommand(payload, args)
	}
	w := &waiter{done: make(chan struct{})}
	deadline := time.Now().Add(p.cfg.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	pc := p.send(addr, p.next.Add(1), &call{n: len(cmds), r: w, deadline: deadline}, payload)
	select {
	case <-w.done:
	case <-ctx.Done():
		p.fail(addr, pc, fmt.Errorf("%w: %w", errNoReplyInTime, ctx.Err()))
		<-w.done
	}
	if w.err != nil {
		return nil, fmt.Errorf("%s: %w", addr, w.err)
	}
	return w.replies, nil
}

// waiter is Forward's Replier.
type waiter struct {
	replies [][]byte
	err     error
	done    chan struct{}
}

func (w *waiter) Replies(replies [][]byte, err error) {
	w.replies, w.err = replies, err
	close(w.done)
}

// Send implements Forwarder. It never waits for the peer: a connection
// that must be dialled first takes the batch at once and sends it once
// the dial and the handshake are done.
func (p *Peers) Send(addr string, lane uint64, payload []byte, n int, r Replier) {
	p.send(addr, lane, &call{n: n, r: r, deadline: time.Now().Add(p.cfg.Timeout)}, payload)
}

// send queues c on lane's connection to addr. A failure reaches c's
// Replier. It returns the connection used, or nil.
func (p *Peers) send(addr string, lane uint64, c *call, payload []byte) *peerConn {
	pc := p.conn(addr, lane)
	if pc == nil {
		c.r.Replies(nil, fmt.Errorf("%w: closed", ErrUnreachable))
		return nil
	}
	err := pc.enqueue(c, payload)
	if errors.Is(err, errPeerClosed) { // on a new connection, then (see peer_alive.go)
		p.fail(addr, pc, err)
		if pc = p.conn(addr, lane); pc == nil {
			c.r.Replies(nil, fmt.Errorf("%w: closed", ErrUnreachable))
			return nil
		}
		err = pc.enqueue(c, payload)
	}
	if err != nil {
		p.fail(addr, pc, err)
		c.r.Replies(nil, fmt.Errorf("%w: %w", ErrUnreachable, err))
	}
	return pc
}

// fail breaks pc, failing every batch waiting on it, and drops it.
func (p *Peers) fail(addr string, pc *peerConn, err error) {
	if pc != nil {
		pc.close(err)
		p.drop(addr, pc)
	}
}

// conn returns lane's connection to addr. If there is none, or it broke,
// a new one takes its place at once and is dialled in the background:
// batches queued on it meanwhile go out, in order, once it is ready. It
// returns nil once the pool is closed.
func (p *Peers) conn(addr string, lane uint64) *peerConn {
	i := int(lane % uint64(p.cfg.Conns))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return nil
	}
	conns := p.pool[addr]
	if conns == nil {
		conns = make([]*peerConn, p.cfg.Conns)
		p.pool[addr] = conns
	}
	if pc := conns[i]; pc != nil && !pc.isBroken() {
		return pc
	}
	pc := newPeerConn()
	conns[i] = pc
	go pc.dial(addr, p.cfg)
	return pc
}

func (p *Peers) drop(addr string, pc *peerConn) {
	pc.close(errors.New("dropped"))
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.pool[addr] {
		if c == pc {
			p.pool[addr][i] = nil
		}
	}
}

// Forget closes the connections to addr, for a member that has gone.
func (p *Peers) Forget(addr string) {
	p.mu.Lock()
	conns := p.pool[addr]
	delete(p.pool, addr)
	p.mu.Unlock()
	for _, pc := range conns {
		if pc != nil {
			pc.close(errors.New("peer gone"))
		}
	}
}

// Addrs returns the addresses it holds connections to, sorted.
func (p *Peers) Addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.pool))
}

// Close closes every connection; Forward fails from then on.
func (p *Peers) Close() {
	p.mu.Lock()
	p.shut = true
	pool := p.pool
	p.pool = map[string][]*peerConn{}
	p.mu.Unlock()
	for _, conns := range pool {
		for _, pc := range conns {
			if pc != nil {
				pc.close(errors.New("closed"))
			}
		}
	}
}
