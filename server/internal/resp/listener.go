package resp

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Accept's backoff after an error such as EMFILE, doubling from the first
// to the last, as net/http's does, rather than spinning.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// errMaxClients is written to a connection refused by maxclients.
const errMaxClients = "-ERR max number of clients reached\r\n"

// Listener is the listener the server accepts from. It wraps each
// connection in a Guard, refuses those beyond maxclients, backs off on
// accept errors, and runs the drain: it closes the socket so new clients are
// refused, drains every connection, and keeps the accept loop blocked until
// the drain is over.
type Listener struct {
	net.Listener
	maxClients *atomic.Int64 // CONFIG SET can change it
	log        *slog.Logger
	Accepted   atomic.Int64 // connections admitted, for INFO
	Rejected   atomic.Int64 // connections refused by maxclients, for INFO

	mu       sync.Mutex // guards conns, draining and end
	conns    map[*Guard]struct{}
	draining bool
	over     bool          // the drain found no connection left: drained is closed
	end      time.Time     // the drain's end, if any
	drained  chan struct{} // closed once draining and no connection is left
	stop     chan struct{} // closed when Accept may return: serving is over
	once     sync.Once     // closes stop
	dOnce    sync.Once     // closes drained
}

// NewListener returns the listener of ln, which admits at most maxClients
// connections at once and logs accept errors to log.
func NewListener(ln net.Listener, maxClients *atomic.Int64, log *slog.Logger) *Listener {
	return &Listener{
		Listener: ln, maxClients: maxClients, log: log,
		conns: map[*Guard]struct{}{}, drained: make(chan struct{}), stop: make(chan struct{}),
	}
}

// Accept returns the next admitted connection. Once the socket is closed it
// blocks until finish, then reports net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		switch {
		case err == nil:
			delay = 0
			if g := l.admit(c); g != nil {
				return g, nil
			}
		case errors.Is(err, net.ErrClosed):
			<-l.stop
			return nil, err
		default:
			delay = nextBackoff(delay)
			if !l.pause(err, delay) {
				return nil, net.ErrClosed
			}
		}
	}
}

// nextBackoff doubles the delay after an accept error, within its bounds.
func nextBackoff(d time.Duration) time.Duration {
	return min(max(2*d, acceptBackoffMin), acceptBackoffMax)
}

// pause waits out an accept error's backoff. It reports false if serving ended meanwhile.
func (l *Listener) pause(err error, delay time.Duration) bool {
	l.log.Warn("accept failed; retrying", "err", err, "backoff", delay)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stop:
		return false
	}
}

// admit wraps c, or refuses it with Redis's error when maxclients are connected.
// A connection that arrives as a drain starts is admitted and drained; one
// that arrives once the drain is over is closed, since the stop has moved on.
func (l *Listener) admit(c net.Conn) *Guard {
	l.mu.Lock()
	if l.over {
		l.mu.Unlock()
		_ = c.Close()
		return nil
	}
	full := int64(len(l.conns)) >= l.maxClients.Load()
	var g *Guard
	if !full {
		g = NewGuard(c)
		l.conns[g] = struct{}{}
		if l.draining {
			g.Drain(l.end)
		}
	}
	l.mu.Unlock()
	if full {
		l.Rejected.Add(1)
		_, _ = c.Write([]byte(errMaxClients)) // a fresh socket's buffer takes it at once
		_ = c.Close()
		return nil
	}
	l.Accepted.Add(1)
	return g
}

// Remove forgets g once its client is gone.
func (l *Listener) Remove(g *Guard) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, g)
	l.checkDrainedLocked()
}

func (l *Listener) checkDrainedLocked() {
	if l.draining && len(l.conns) == 0 {
		l.over = true
		l.dOnce.Do(func() { close(l.drained) })
	}
}

// Count returns the connections admitted and not yet gone.
func (l *Listener) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Drain closes the socket and starts every connection's drain. end, if not
// zero, is when connections stop waiting for new requests.
func (l *Listener) Drain(end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draining, l.end = true, end
	_ = l.Listener.Close()
	for g := range l.conns {
		g.Drain(end)
	}
	l.checkDrainedLocked()
}

// ForceClose closes every connection at once, whatever it is doing.
func (l *Listener) ForceClose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for g := range l.conns {
		_ = g.Close()
	}
}

// Finish closes the socket and lets Accept return, which ends the server's accept loop.
func (l *Listener) Finish() {
	l.once.Do(func() { close(l.stop) })
	_ = l.Listener.Close()
}

// Close is Finish.
func (l *Listener) Close() error {
	l.Finish()
	return nil
}

// Drained is closed once a drain finds no connection left.
func (l *Listener) Drained() <-chan struct{} { return l.drained }

// Draining reports whether Drain was called.
func (l *Listener) Draining() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.draining
}

// Conns returns the connections admitted and not yet gone.
func (l *Listener) Conns() []*Guard {
	l.mu.Lock()
	defer l.mu.Unlock()
	gs := make([]*Guard, 0, len(l.conns))
	for g := range l.conns {
		gs = append(gs, g)
	}
	return gs
}
