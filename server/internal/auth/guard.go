package auth

import (
	"net"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The bounds of the brute-force guard.
const (
	guardMaxAddrs   = 100000 // (address, user) pairs tracked at once; past it, failures go uncounted rather than grow memory
	guardAddrFactor = 3      // an address may fail this many times the limit, over all its users, before every user of it is refused
	guardMaxUser    = 128    // bytes of a user name the guard keys on
)

// PeerUser is the name the guard counts the node-to-node handshake under:
// no ACL user can have it, since a name cannot hold a NUL.
const PeerUser = "\x00rl.peer"

// Guard slows down password guessing. It counts wrong passwords per
// (client IP address, user) in a sliding log, with rlstore's own store and
// algorithm. The first half of the limit is free; each failure past it
// holds the next check of that user's password from that address for one
// more step (window/(4·limit): 1.5 s by default) before the password is
// checked, right or wrong; once the limit is reached in the window, that
// user's AUTH from that address is refused unchecked until the oldest
// failure leaves the window. So one address gets at most limit guesses
// per window at each user, and other users behind the same address (a
// NAT, a sidecar on loopback) are not locked out by them. An address that
// fails guardAddrFactor times the limit over all users is refused for
// every user, and for the peer handshake. A right password forgets that
// user's failures at that address. The transport separately closes a
// connection after a few failures. A nil *Guard guards nothing; a Guard is
// safe for use by many goroutines.
type Guard struct {
	store *shard.Map
	user  window.Params // failures of one user at one address
	addr  window.Params // failures of every user at one address
	step  time.Duration // the delay each failure past the free half adds
}

// NewGuard returns a guard that allows limit failures per window per; nil
// (no guard) if limit is not positive.
func NewGuard(limit int, per time.Duration) (*Guard, error) {
	if limit <= 0 {
		return nil, nil
	}
	m, err := shard.New(shard.Config{Shards: 16, MaxKeys: guardMaxAddrs})
	if err != nil {
		return nil, err
	}
	per = max(per.Round(time.Millisecond), time.Millisecond)
	l := min(int64(limit), window.MaxLogLimit/guardAddrFactor)
	return &Guard{store: m,
		user: window.Params{Kind: window.KindLog, Limit: l, Period: per},
		addr: window.Params{Kind: window.KindLog, Limit: l * guardAddrFactor, Period: per},
		step: per / time.Duration(4*l),
	}, nil
}

// Admit is called before a password of user's from addr is checked. It
// counts the try as a failure at once, so that parallel connections cannot
// all slip under the limit (Passed takes it back), and returns how long to
// hold the check, or, if addr may not try user now, how long it must wait.
func (g *Guard) Admit(addr, user string, now time.Time) (delay, wait time.Duration) {
	if g == nil {
		return 0, 0
	}
	ns := now.UnixNano()
	if d, err := g.store.Decide(g.key(addr, ""), g.addr, ns, 1, true); err == nil && !d.Allowed {
		return 0, max(d.Wait, time.Millisecond)
	}
	d, err := g.store.Decide(g.key(addr, user), g.user, ns, 1, false)
	switch {
	case err != nil:
		return 0, 0
	case !d.Allowed:
		return 0, max(d.Wait, time.Millisecond)
	}
	return g.delay(g.user.Limit - d.Remaining - 1), 0
}

// Blocked returns how long addr must wait before it may try user, or 0,
// counting nothing: for a handshake's first step, which checks no secret.
func (g *Guard) Blocked(addr, user string, now time.Time) time.Duration {
	if g == nil {
		return 0
	}
	ns := now.UnixNano()
	for _, k := range []struct {
		key []byte
		p   window.Params
	}{{g.key(addr, ""), g.addr}, {g.key(addr, user), g.user}} {
		if d, err := g.store.Decide(k.key, k.p, ns, 1, true); err == nil && !d.Allowed {
			return max(d.Wait, time.Millisecond)
		}
	}
	return 0
}

// delay is the hold on a check that follows failed failures.
func (g *Guard) delay(failed int64) time.Duration {
	past := failed - g.user.Limit/2 + 1
	if past <= 0 {
		return 0
	}
	return time.Duration(past) * g.step
}

// Passed forgets user's failures at addr: the right password proves the
// typos were the user's own.
func (g *Guard) Passed(addr, user string) {
	if g != nil {
		g.store.Delete(g.key(addr, user))
	}
}

// Failed counts a wrong password from addr toward its total over users;
// Admit has counted it for its user.
func (g *Guard) Failed(addr string, now time.Time) {
	if g == nil {
		return
	}
	_, _ = g.store.Decide(g.key(addr, ""), g.addr, now.UnixNano(), 1, false)
	g.store.Sweep(now.UnixNano(), 64) // bounded, and only on failures: the store needs no goroutine
}

// key is addr's host, without its port (a client cannot reset its count
// by reconnecting), then a NUL and user; "" counts the whole address.
func (g *Guard) key(addr, user string) []byte {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if user == "" {
		return []byte(host)
	}
	return append(append([]byte(host), 0), user[:min(len(user), guardMaxUser)]...)
}

// BlockedReply is the reply to an AUTH from an address that must wait.
func BlockedReply(wait time.Duration) string {
	return "WRONGPASS too many wrong passwords from this address; retry in " +
		strconv.FormatInt(wait.Milliseconds(), 10) + " ms"
}
