package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Forwarder sends a batch of commands to the node whose RESP port is at
// addr and returns each reply's raw RESP bytes, in order. The server
// forwards through this interface, so tests and other transports can stand
// in for Peers.
type Forwarder interface {
	Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error)
}

// ErrUnreachable wraps every failure to get replies from a peer: it could
// not be dialled, refused the handshake, broke the connection, or did not
// answer in time.
var ErrUnreachable = errors.New("cluster: peer unreachable")

// PeersConfig configures Peers.
type PeersConfig struct {
	Name    string        // this node's name, sent in the handshake
	Secret  []byte        // the cluster's shared secret; peers check the handshake with it
	Conns   int           // connections kept to each peer. Default DefaultPeerConns
	Timeout time.Duration // how long a batch (or a dial) may take. Default DefaultPeerTimeout

	// TLS, if set, makes every connection TLS (--tls-cluster): it is called
	// for each dial, so reloaded certificates reach new connections, and
	// the handshake above runs inside the TLS session. TLSAddr then maps
	// the peer's RESP address, the one Forward is given, to the TLS address
	// to dial; one it cannot map is not dialled in plain text but fails.
	TLS     func() *tls.Config
	TLSAddr func(respAddr string) (string, bool)
}

// The defaults of PeersConfig.
const (
	DefaultPeerConns   = 2
	DefaultPeerTimeout = time.Second
)

// Peers holds a few persistent, pipelined connections to each peer.
// Batches from many goroutines share them: each batch is written whole,
// and a reader per connection hands replies back in the order batches
// were written. It is safe for concurrent use.
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
	return &Peers{cfg: cfg, pool: map[string][]*peerConn{}}
}

// Forward implements Forwarder. A batch that fails or times out fails
// whole, with an error wrapping ErrUnreachable, and the connection it used
// is dropped: its later replies could no longer be matched.
func (p *Peers) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	pc, err := p.conn(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, addr, err)
	}
	replies, err := pc.do(ctx, cmds)
	if err != nil {
		p.drop(addr, pc)
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, addr, err)
	}
	return replies, nil
}

// conn returns a live connection to addr, dialling one if its place in the pool is empty.
func (p *Peers) conn(ctx context.Context, addr string) (*peerConn, error) {
	i := int(p.next.Add(1) % uint64(p.cfg.Conns))
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return nil, errors.New("closed")
	}
	conns := p.pool[addr]
	if conns == nil {
		conns = make([]*peerConn, p.cfg.Conns)
		p.pool[addr] = conns
	}
	pc := conns[i]
	p.mu.Unlock()
	if pc != nil && !pc.isBroken() {
		return pc, nil
	}
	pc, err := dialPeer(ctx, addr, p.cfg)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		pc.close(errors.New("closed"))
		return nil, errors.New("closed")
	}
	if old := p.pool[addr][i]; old != nil && !old.isBroken() {
		pc.close(errors.New("a spare")) // another goroutine dialled first
		return old, nil
	}
	p.pool[addr][i] = pc
	return pc, nil
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

// peerConn is one pipelined connection. Writers queue a call per batch in
// write order; the read loop fills the oldest call's replies.
type peerConn struct {
	nc      net.Conn
	mu      sync.Mutex // guards w, buf, pending's order, and err
	w       *bufio.Writer
	pending chan *call
	err     error
	broken  atomic.Bool
}

type call struct {
	n       int
	replies [][]byte
	err     error
	done    chan struct{}
}

// maxPending bounds the batches in flight on one connection.
const maxPending = 1024

func dialPeer(ctx context.Context, addr string, cfg PeersConfig) (*peerConn, error) {
	nc, err := dialConn(ctx, addr, cfg)
	if err != nil {
		return nil, err
	}
	pc := &peerConn{nc: nc, w: bufio.NewWriter(nc), pending: make(chan *call, maxPending)}
	if err := pc.handshake(ctx, cfg); err != nil {
		_ = nc.Close()
		return nil, err
	}
	go pc.readLoop(bufio.NewReader(nc))
	return pc, nil
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

// handshake proves this node holds the cluster's secret (see PeerMAC).
func (pc *peerConn) handshake(ctx context.Context, cfg PeersConfig) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = pc.nc.SetDeadline(dl)
		defer pc.nc.SetDeadline(time.Time{})
	}
	r := bufio.NewReader(pc.nc)
	nonce, err := pc.roundTrip(r, [][]byte{[]byte(PeerCommand), []byte("HELLO"), []byte(cfg.Name)})
	if err != nil {
		return err
	}
	mac := PeerMAC(cfg.Secret, nonce, cfg.Name)
	ok, err := pc.roundTrip(r, [][]byte{[]byte(PeerCommand), []byte("AUTH"), []byte(cfg.Name), []byte(mac)})
	if err != nil {
		return err
	}
	if ok != "OK" {
		return fmt.Errorf("handshake: %s", ok)
	}
	if r.Buffered() > 0 {
		return errors.New("handshake: unexpected bytes")
	}
	return nil
}

// roundTrip sends one command and returns its simple or bulk reply's text.
func (pc *peerConn) roundTrip(r *bufio.Reader, args [][]byte) (string, error) {
	if _, err := pc.nc.Write(appendCommand(nil, args)); err != nil {
		return "", err
	}
	rep, err := readReply(r, nil, 0)
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
		return string(rep[i+1 : len(rep)-2]), nil
	}
	return "", fmt.Errorf("handshake refused: %s", trimCRLF(rep))
}

func trimCRLF(b []byte) string {
	if len(b) >= 2 {
		b = b[:len(b)-2]
	}
	return string(b)
}

// do writes a batch and waits for its replies or ctx's end.
func (pc *peerConn) do(ctx context.Context, cmds [][][]byte) ([][]byte, error) {
	c := &call{n: len(cmds), replies: make([][]byte, 0, len(cmds)), done: make(chan struct{})}
	if err := pc.send(ctx, c, cmds); err != nil {
		return nil, err
	}
	select {
	case <-c.done:
		return c.replies, c.err
	case <-ctx.Done():
		pc.close(fmt.Errorf("no reply in time: %w", ctx.Err()))
		<-c.done
		return nil, ctx.Err()
	}
}

// send writes a batch. The write ends by ctx's deadline: a peer that does
// not read would otherwise hold mu, and with it the timeout's close, for
// as long as it pleases.
func (pc *peerConn) send(ctx context.Context, c *call, cmds [][][]byte) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.err != nil {
		return pc.err
	}
	dl, _ := ctx.Deadline() // zero: no deadline
	_ = pc.nc.SetWriteDeadline(dl)
	var buf []byte
	for _, args := range cmds {
		buf = appendCommand(buf, args)
	}
	select {
	case pc.pending <- c:
	default:
		return errors.New("too many batches in flight")
	}
	if _, err := pc.w.Write(buf); err != nil {
		pc.failLocked(err)
		return err
	}
	if err := pc.w.Flush(); err != nil {
		pc.failLocked(err)
		return err
	}
	return nil
}

// readLoop matches replies to calls in order until the connection fails.
func (pc *peerConn) readLoop(r *bufio.Reader) {
	for c := range pc.pending {
		for len(c.replies) < c.n {
			rep, err := readReply(r, nil, 0)
			if err != nil {
				c.err = err
				close(c.done)
				pc.close(err)
				for c := range pc.pending { // closed by close: this ends
					c.err = err
					close(c.done)
				}
				return
			}
			c.replies = append(c.replies, rep)
		}
		close(c.done)
	}
}

func (pc *peerConn) isBroken() bool { return pc.broken.Load() }

// close breaks the connection; the read loop then fails every waiting call.
func (pc *peerConn) close(err error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.failLocked(err)
}

func (pc *peerConn) failLocked(err error) {
	if pc.err == nil {
		pc.err = err
		pc.broken.Store(true)
		close(pc.pending) // no send follows: send checks err under mu
		_ = pc.nc.Close()
	}
}
