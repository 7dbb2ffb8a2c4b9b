package inproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rlstore/rlstore/gateway/batch"
	"github.com/tidwall/redcon"
)

// Gateway decides the gRPC gateway's batches (gateway/batch.Decider)
// through the path every RESP command takes: each batch is written as
// pipelined decision commands to a client of the server's own, which the
// Delegate serves by the same loop as a socket's, on an in-memory
// connection. So dispatch, cluster forwarding (one round trip per owner
// for a batch), persistence, replicas, INFO, metrics and the output limits
// apply unchanged, and CLIENT LIST shows the gateway's clients (name
// "gateway"). The client is authenticated as the default user with no ACL
// restriction: the gateway's configuration, not the network, decides what
// it asks.
//
// Gateway is safe for concurrent use: each batch takes a connection of its
// own from a pool of at most maxConns.
type Gateway struct {
	d     Delegate
	slots chan struct{}     // a token per connection open
	free  chan *gatewayConn // the open connections no batch uses

	mu     sync.Mutex // guards all and closed
	all    map[*gatewayConn]struct{}
	closed bool
}

// gatewayConn is the gateway's end of one in-memory connection.
type gatewayConn struct {
	p   *memPipe
	ctx context.Context // the call under way's, for Read
	r   *bufio.Reader   // reads the replies through Read
	buf []byte
}

// Read reads replies for r, waiting at most until the call's context ends.
func (c *gatewayConn) Read(b []byte) (int, error) { return c.p.gatewayRead(c.ctx, b) }

// errGatewayClosed is returned by a Gateway after Close.
var errGatewayClosed = errors.New("server: gateway closed")

// countLimit is the limit of batch.Count's RL.FIXED: far above any count,
// so that every hit is counted, and the count is countLimit - remaining.
const countLimit = 1 << 62

// Delegate is what a Gateway needs of the server, set once at New
// (memberlist's Config + delegates): to serve one more client.
type Delegate interface {
	// ServeConn serves a client of the server on conn, logged in as the
	// default user with no ACL restriction and named "gateway", on a
	// goroutine of its own, until conn closes.
	ServeConn(conn net.Conn)
}

// New returns a decider for the gRPC gateway with at most maxConns
// connections (one per batch under way), whose clients d serves; Close it
// before the server.
func New(maxConns int, d Delegate) *Gateway {
	maxConns = max(maxConns, 1)
	return &Gateway{d: d, slots: make(chan struct{}, maxConns), free: make(chan *gatewayConn, maxConns), all: map[*gatewayConn]struct{}{}}
}

// Decide implements batch.Decider.
func (g *Gateway) Decide(ctx context.Context, reqs []batch.Request, out []batch.Result) error {
	c, err := g.get(ctx)
	if err != nil {
		return err
	}
	if err := c.roundTrip(ctx, reqs, out); err != nil {
		g.drop(c)
		return err
	}
	g.put(c)
	return nil
}

// get takes a free connection, or opens one while fewer than maxConns are open.
func (g *Gateway) get(ctx context.Context) (*gatewayConn, error) {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, errGatewayClosed
	}
	select {
	case c := <-g.free:
		return c, nil
	default:
	}
	select {
	case c := <-g.free:
		return c, nil
	case g.slots <- struct{}{}:
		c, err := g.open()
		if err != nil {
			<-g.slots
		}
		return c, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// open starts a client of the server on an in-memory connection.
func (g *Gateway) open() (*gatewayConn, error) {
	p := newMemPipe()
	g.d.ServeConn(&p.server)
	conn := &gatewayConn{p: p, buf: make([]byte, 0, 1024)}
	conn.r = bufio.NewReaderSize(conn, 4096)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		p.close()
		return nil, errGatewayClosed
	}
	g.all[conn] = struct{}{}
	return conn, nil
}

func (g *Gateway) put(c *gatewayConn) { g.free <- c } // never blocks: it has room for every open connection

// drop closes a connection whose state is unknown (an error, a deadline).
func (g *Gateway) drop(c *gatewayConn) {
	c.p.close()
	g.mu.Lock()
	delete(g.all, c)
	g.mu.Unlock()
	<-g.slots
}

// Close closes every connection; batches under way fail.
func (g *Gateway) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for c := range g.all {
		c.p.close()
	}
	clear(g.all)
	return nil
}

// roundTrip writes the batch as one pipeline, which the server reads as
// one batch, and reads its replies.
func (c *gatewayConn) roundTrip(ctx context.Context, reqs []batch.Request, out []batch.Result) error {
	c.ctx = ctx
	defer func() { c.ctx = nil }()
	c.buf = c.buf[:0]
	for i := range reqs {
		c.buf = appendGatewayCommand(c.buf, &reqs[i])
	}
	if _, err := c.p.gatewayWrite(c.buf); err != nil {
		return err
	}
	for i := range reqs {
		if err := c.readReply(&reqs[i], &out[i]); err != nil {
			return err
		}
	}
	return nil
}

// appendGatewayCommand appends r as the decision command that decides it.
func appendGatewayCommand(b []byte, r *batch.Request) []byte {
	name, limit, rate := "RL.FIXED", r.Limit, int64(0)
	switch r.Kind {
	case batch.Count:
		limit = countLimit
	case batch.Slide:
		name = "RL.SLIDE"
	case batch.Log:
		name = "RL.LOG"
	case batch.Token:
		name, rate = "RL.TOKEN", r.Limit
	case batch.Leaky:
		name, rate = "RL.LEAKY", r.Limit
	}
	n := 4
	if rate != 0 {
		n++
	}
	if r.Hits > 0 {
		n += 2
	} else {
		n++
	}
	b = redcon.AppendArray(b, n)
	b = redcon.AppendBulkString(b, name)
	b = redcon.AppendBulk(b, r.Key)
	b = appendBulkInt(b, limit)
	if rate != 0 {
		b = appendBulkInt(b, rate)
	}
	b = appendBulkInt(b, int64(r.Window/time.Second))
	if r.Hits > 0 {
		b = redcon.AppendBulkString(b, "COST")
		return appendBulkInt(b, r.Hits)
	}
	return redcon.AppendBulkString(b, "PEEK")
}

// appendBulkInt appends v as a bulk string, without allocating.
func appendBulkInt(b []byte, v int64) []byte {
	var num [20]byte
	return redcon.AppendBulk(b, strconv.AppendInt(num[:0], v, 10))
}

// readReply reads one decision reply into res: the five integers, or the
// error the store answered, which fails this request only.
func (c *gatewayConn) readReply(r *batch.Request, res *batch.Result) error {
	line, err := c.line()
	if err != nil {
		return err
	}
	*res = batch.Result{}
	switch {
	case len(line) > 0 && line[0] == '-':
		res.Err = errors.New(string(line[1:]))
		return nil
	case string(line) != "*5":
		return fmt.Errorf("server: gateway: unexpected reply %q", line)
	}
	var v [5]int64
	for i := range v {
		if line, err = c.line(); err != nil {
			return err
		}
		if len(line) < 2 || line[0] != ':' {
			return fmt.Errorf("server: gateway: unexpected reply element %q", line)
		}
		var ok bool
		if v[i], ok = parseReplyInt(line[1:]); !ok {
			return fmt.Errorf("server: gateway: unexpected reply element %q", line)
		}
	}
	res.Allowed, res.Remaining, res.Reset = v[0] == 1, v[2], time.Duration(v[4])*time.Millisecond
	if r.Kind == batch.Count {
		res.Count = countLimit - v[2]
		if r.Hits == 0 { // PEEK answers as a request of 1 would
			res.Count--
		}
		res.Allowed, res.Remaining = false, 0
	}
	return nil
}

// line reads one reply line without its CRLF.
func (c *gatewayConn) line() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("server: gateway: malformed reply %q", line)
	}
	return line[:len(line)-2], nil
}

// parseReplyInt parses a reply's decimal integer without allocating.
func parseReplyInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v int64
	for _, ch := range b {
		d := int64(ch - '0')
		if ch < '0' || ch > '9' || v > (math.MaxInt64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}
