package httplimit

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/rlstore/rlstore/client"
)

// ConcurrencyConfig configures a Concurrency limiter: at most Limit
// requests of one key in flight at once (the IETF draft's
// concurrent-requests quota unit; Stripe's concurrent-requests limiter).
type ConcurrencyConfig struct {
	Client *client.Client
	Limit  int64
	// TTL is how long a request's lease lives without a renewal: the
	// longest a crashed handler holds its slot. 0 means 30 s. While the
	// handler runs the lease is renewed every TTL/3.
	TTL time.Duration
	// Key returns a request's key; nil means the client's address (ClientIP
	// without trusted proxies). An error answers 400.
	Key func(*http.Request) (string, error)
	// KeyPrefix is put before every key; empty means "httplimit:concurrent:".
	KeyPrefix string
	// Name names the policy in the RateLimit headers; default "concurrent".
	Name string
	// FailOpen serves requests while rlstore cannot answer; false answers 503.
	FailOpen bool
	// Timeout bounds each call to rlstore; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Concurrency is an HTTP middleware that takes a lease (RL.ACQUIRE) before
// the handler, renews it while the handler runs (RL.RENEW), and gives it
// back after (RL.RELEASE), so a slot is held exactly while a request is
// served, or until TTL after its server died. It is safe for concurrent use.
type Concurrency struct {
	cfg ConcurrencyConfig
}

// NewConcurrency validates cfg and returns the limiter.
func NewConcurrency(cfg ConcurrencyConfig) (*Concurrency, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("httplimit: ConcurrencyConfig needs a Client")
	case cfg.Limit < 1:
		return nil, errors.New("httplimit: ConcurrencyConfig.Limit must be at least 1")
	case cfg.TTL < 0 || cfg.Timeout < 0:
		return nil, errors.New("httplimit: ConcurrencyConfig durations must not be negative")
	}
	setDefault(&cfg.TTL, 30*time.Second)
	setDefault(&cfg.Timeout, DefaultTimeout)
	setDefault(&cfg.KeyPrefix, "httplimit:concurrent:")
	setDefault(&cfg.Name, "concurrent")
	if cfg.Key == nil {
		ip, err := NewClientIP(nil)
		if err != nil {
			return nil, err
		}
		cfg.Key = ip.Key
	}
	return &Concurrency{cfg: cfg}, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Handler wraps next.
func (l *Concurrency) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := l.cfg.Key(r)
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		key := l.cfg.KeyPrefix + k
		ctx, cancel := context.WithTimeout(r.Context(), l.cfg.Timeout)
		lease, err := l.cfg.Client.Acquire(ctx, key, l.cfg.Limit, l.cfg.TTL, "")
		cancel()
		switch {
		case err != nil && l.cfg.FailOpen:
			next.ServeHTTP(w, r)
			return
		case err != nil:
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		lease.SetHeaders(w.Header(), l.cfg.Name)
		if !lease.Allowed {
			http.Error(w, "too many concurrent requests", http.StatusTooManyRequests)
			return
		}
		stop := l.renewWhile(key, lease.ID)
		defer l.release(key, lease.ID, stop)
		next.ServeHTTP(w, r)
	})
}

// renewWhile renews the lease every TTL/3 until the returned func is called.
func (l *Concurrency) renewWhile(key, id string) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(l.cfg.TTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
				_, _ = l.cfg.Client.Renew(ctx, key, id, l.cfg.TTL) // a failed renewal is retried at the next tick
				cancel()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// release stops the renewals and gives the lease back, even if the
// request's context was cancelled: the slot must not wait for its TTL.
func (l *Concurrency) release(key, id string, stop func()) {
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	_, _ = l.cfg.Client.Release(ctx, key, id)
}
