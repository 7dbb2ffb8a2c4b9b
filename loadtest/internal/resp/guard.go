package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// ErrNotLoopback is returned for a target that is, or resolves to, an address
// outside 127.0.0.0/8 and ::1. A load generator aimed at someone else's
// server is a denial-of-service tool, so the guard is not optional.
var ErrNotLoopback = errors.New("loadtest: target is not a loopback address")

// ResolveLoopback resolves addr ("host:port") and returns a dialable
// "ip:port" when every address the host resolves to is loopback. Callers dial
// the returned address, so a name cannot resolve differently at dial time.
func ResolveLoopback(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("loadtest: target %q: %w", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("loadtest: target %q: bad port", addr)
	}
	ips, err := lookupHost(ctx, host)
	if err != nil {
		return "", fmt.Errorf("loadtest: target %q: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return "", fmt.Errorf("%w: %s resolves to %s", ErrNotLoopback, addr, ip)
		}
	}
	return net.JoinHostPort(ips[0].Unmap().String(), port), nil
}

func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	if host == "" {
		return nil, fmt.Errorf("%w: empty host", ErrNotLoopback)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("no addresses for %q", host)
	}
	return ips, nil
}
