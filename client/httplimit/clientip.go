package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP finds a request's client address: the connection's peer, unless
// that peer is a trusted proxy, in which case X-Forwarded-For is read from
// right to left and the first address that is not a trusted proxy wins.
// Addresses a client writes at the left of the header are never believed
// past an untrusted hop.
type ClientIP struct {
	trusted []netip.Prefix
	// IPv6Bits is how many leading bits of an IPv6 address Key keeps: one
	// host usually holds a whole /64 or more, so keying by the full address
	// lets it rotate addresses. NewClientIP sets DefaultIPv6Bits.
	IPv6Bits int
}

// DefaultIPv6Bits keys IPv6 clients by their /56, as express-rate-limit 8 does.
const DefaultIPv6Bits = 56

// NewClientIP parses proxies: addresses ("10.0.0.7") or prefixes ("10.0.0.0/8").
func NewClientIP(proxies []string) (*ClientIP, error) {
	c := &ClientIP{IPv6Bits: DefaultIPv6Bits}
	for _, p := range proxies {
		pfx, err := parsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("httplimit: trusted proxy %q: %w", p, err)
		}
		c.trusted = append(c.trusted, pfx)
	}
	return c, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

func (c *ClientIP) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// errNoAddr means the request's peer address could not be parsed.
var errNoAddr = errors.New("httplimit: request has no client address")

// Key returns the client's address as a string, the default rate-limit key;
// an IPv6 address becomes its prefix of IPv6Bits ("2001:db8:0:100::/56").
func (c *ClientIP) Key(r *http.Request) (string, error) {
	a, err := c.Addr(r)
	if err != nil {
		return "", err
	}
	if a.Is6() && c.IPv6Bits > 0 && c.IPv6Bits < 128 {
		return netip.PrefixFrom(a, c.IPv6Bits).Masked().String(), nil
	}
	return a.String(), nil
}

// Addr returns the client's address.
func (c *ClientIP) Addr(r *http.Request) (netip.Addr, error) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: %q", errNoAddr, r.RemoteAddr)
	}
	peer := ap.Addr().Unmap()
	if !c.isTrusted(peer) {
		return peer, nil
	}
	hops := forwardedHops(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer, nil // a garbled hop: stop at the last address we trust to be real
		}
		a = a.Unmap()
		if !c.isTrusted(a) {
			return a, nil
		}
		peer = a
	}
	return peer, nil
}

// forwardedHops joins every X-Forwarded-For field into one list of hops.
func forwardedHops(fields []string) []string {
	var hops []string
	for _, f := range fields {
		hops = append(hops, strings.Split(f, ",")...)
	}
	return hops
}
