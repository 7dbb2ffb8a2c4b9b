package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// lean serves ShouldRateLimit and Health/Check on a connection loop of
// its own (leanconn.go) instead of grpc-go's transport, whose per-call
// cost (HPACK, stream setup, the loopy writer, some 40 allocations) was
// most of the gateway's CPU. A new connection is sniffed: when its first
// call is one of those two methods in the plain form (protobuf, no
// compression), the connection stays here; otherwise it goes, with every
// byte read so far replayed, to grpc-go, which serves everything else
// (reflection, Health/Watch, compression) as before.
type lean struct {
	svc      *Service
	health   *health
	tls      *tls.Config // nil: plain text
	maxRecv  int
	log      *slog.Logger
	fallback *connListener // grpc-go serves what it accepts
	work     chan *leanStream
	age      time.Duration // a connection gets GOAWAY after it, as grpc-go's MaxConnectionAge
	grace    time.Duration // and is closed that long after
	blocks   leanBlocks
	served   atomic.Int64 // connections served here
	handed   atomic.Int64 // connections handed to grpc-go

	mu      sync.Mutex // guards the fields below
	conns   map[*leanConn]struct{}
	closing bool
	lns     []net.Listener
}

// Limits of a lean connection: what a peer can make it hold is bounded by
// them (leanconn.go).
const (
	leanMaxStreams    = 1024     // SETTINGS_MAX_CONCURRENT_STREAMS
	leanMaxFrame      = 16 << 10 // SETTINGS_MAX_FRAME_SIZE: HTTP/2's least
	leanMaxHeaderList = 64 << 10 // a request's header block, compressed or not
	leanSniffBytes    = 64 << 10 // read before the first call's headers end
	leanMaxOut        = 1 << 20  // bytes queued to write before reading stops
	leanWindowAck     = 16 << 10 // connection credit given back in one WINDOW_UPDATE
	leanBatch         = 1 << 10  // a write smaller than this waits a moment for more (flush)
)

func newLean(cfg ServerConfig, h *health, fallback *connListener) *lean {
	l := &lean{svc: cfg.Service, health: h, maxRecv: cfg.MaxRecvBytes, log: cfg.Logger, fallback: fallback,
		conns: make(map[*leanConn]struct{}), age: maxConnectionAge, grace: maxConnectionAgeGrace, blocks: newLeanBlocks()}
	if cfg.TLS != nil {
		l.tls = withH2(cfg.TLS)
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	n := max(streamWorkers, 16*runtime.GOMAXPROCS(0))
	l.work = make(chan *leanStream)
	for range n {
		go l.worker()
	}
	return l
}

// withH2 is c offering ALPN's h2, also in the configurations its
// GetConfigForClient returns (certificates reloaded on change), as
// grpc-go's credentials.NewTLS does.
func withH2(c *tls.Config) *tls.Config {
	c = c.Clone()
	if !slices.Contains(c.NextProtos, "h2") {
		c.NextProtos = append(c.NextProtos, "h2")
	}
	if get := c.GetConfigForClient; get != nil {
		c.GetConfigForClient = func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
			cc, err := get(hi)
			if cc == nil || err != nil {
				return cc, err
			}
			return withH2(cc), nil
		}
	}
	return c
}

// window is the receive window of a connection and of each of its
// streams: one request of the largest size fits.
func (l *lean) window() uint32 { return uint32(max(l.maxRecv+5+leanMaxFrame, 64<<10)) }

func (l *lean) worker() {
	for st := range l.work {
		st.c.run(st)
	}
}

// dispatch runs st's call on a worker, or on a goroutine of its own when
// every worker is busy.
func (l *lean) dispatch(st *leanStream) {
	select {
	case l.work <- st:
	default:
		go st.c.run(st)
	}
}

// serve accepts on ln until it is closed.
func (l *lean) serve(ln net.Listener) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		_ = ln.Close()
		return errServerStopped
	}
	l.lns = append(l.lns, ln)
	l.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			if l.stopping() {
				return nil
			}
			return err
		}
		delay = 0
		go l.handle(nc)
	}
}

var errServerStopped = errors.New("gateway: server stopped")

func (l *lean) stopping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closing
}

// handle sniffs nc's first call and serves the connection here or hands
// it to grpc-go.
func (l *lean) handle(nc net.Conn) {
	if l.tls != nil {
		tc := tls.Server(nc, l.tls)
		_ = nc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
		if err := tc.Handshake(); err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
			// grpc-go refuses a connection without ALPN's h2 too.
			_ = nc.Close()
			return
		}
		_ = nc.SetDeadline(time.Time{})
		nc = tc
	}
	s, ok := sniff(nc)
	if !ok {
		l.handed.Add(1)
		l.fallback.push(&replayConn{Conn: nc, replay: s.read})
		return
	}
	l.served.Add(1)
	c := newLeanConn(l, nc, s.read[len(clientPreface):])
	if !l.track(c) {
		_ = nc.Close()
		return
	}
	c.serve()
	l.untrack(c)
}

// tlsHandshakeTimeout is grpc-go's default ConnectionTimeout.
const tlsHandshakeTimeout = 120 * time.Second

func (l *lean) track(c *leanConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *lean) untrack(c *leanConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// stop closes the listeners; graceful sends every connection GOAWAY and
// waits for its calls (until ctx ends), otherwise connections close at once.
func (l *lean) stop(ctx context.Context, graceful bool) {
	l.mu.Lock()
	l.closing = true
	for _, ln := range l.lns {
		_ = ln.Close()
	}
	conns := make([]*leanConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	l.fallback.close()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if graceful {
				c.drain(ctx)
			}
			c.close()
		}()
	}
	wg.Wait()
}
