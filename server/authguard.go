package server

import (
	"net"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The defaults of the brute-force guard.
const (
	DefaultAuthFailLimit  = 10
	DefaultAuthFailWindow = time.Minute
	authGuardMaxAddrs     = 100000 // addresses tracked at once; past it, failures go uncounted rather than grow memory
)

// authGuard slows down password guessing: it counts wrong passwords per
// client IP address in a sliding window, with rlstore's own store and
// algorithm, and once an address has failed limit times in the window its
// AUTH is refused unchecked until the oldest failure leaves the window.
// The transport separately closes a connection after a few failures.
type authGuard struct {
	store  *shard.Map
	params window.Params
}

func newAuthGuard(limit int, per time.Duration) (*authGuard, error) {
	if limit <= 0 {
		return nil, nil
	}
	m, err := shard.New(shard.Config{Shards: 16, MaxKeys: authGuardMaxAddrs})
	if err != nil {
		return nil, err
	}
	per = max(per.Round(time.Second), time.Second) // RL.SLIDE's windows are whole seconds
	return &authGuard{store: m, params: window.Params{Kind: window.KindSlide, Limit: int64(limit), Period: per}}, nil
}

// wait returns how long addr must wait before an AUTH of its is checked,
// or 0 if it may try now.
func (g *authGuard) wait(addr string, now time.Time) time.Duration {
	if g == nil {
		return 0
	}
	d, err := g.store.Decide(hostKey(addr), g.params, now.UnixNano(), 1, true)
	if err != nil || d.Allowed {
		return 0
	}
	return max(d.Wait, time.Millisecond)
}

// failed counts a wrong password from addr.
func (g *authGuard) failed(addr string, now time.Time) {
	if g == nil {
		return
	}
	_, _ = g.store.Decide(hostKey(addr), g.params, now.UnixNano(), 1, false)
	g.store.Sweep(now.UnixNano(), 64) // bounded, and only on failures: the store needs no goroutine
}

// hostKey is addr without its port: a client cannot reset its count by reconnecting.
func hostKey(addr string) []byte {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return []byte(h)
	}
	return []byte(addr)
}

// errAuthBlocked is the reply to an AUTH from an address that must wait.
func errAuthBlocked(wait time.Duration) string {
	return "WRONGPASS too many wrong passwords from this address; retry in " +
		strconv.FormatInt(wait.Milliseconds(), 10) + " ms"
}
