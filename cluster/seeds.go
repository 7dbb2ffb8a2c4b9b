package cluster

import (
	"context"
	"net"
	"time"
)

// seedLookupTimeout bounds the name lookup of one seed by the rejoin loop.
const seedLookupTimeout = 2 * time.Second

// missingAddrs returns what of seed is not among the members' gossip
// addresses in have. A seed whose host is a name may stand for many nodes
// (a Kubernetes headless Service, a DNS round robin): each address it
// resolves to is a seed of its own, so that one member among them (this
// node itself, often) does not hide the others. A seed whose name does not
// resolve is returned as it is, for memberlist's Join to try again.
func missingAddrs(seed string, have map[string]bool, lookup func(ctx context.Context, network, host string) ([]net.IP, error)) []string {
	if have[seed] {
		return nil
	}
	host, port, err := net.SplitHostPort(seed)
	if err != nil || net.ParseIP(host) != nil {
		return []string{seed}
	}
	ctx, cancel := context.WithTimeout(context.Background(), seedLookupTimeout)
	defer cancel()
	ips, err := lookup(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return []string{seed}
	}
	var out []string
	for _, ip := range ips {
		if a := net.JoinHostPort(ip.String(), port); !have[a] {
			out = append(out, a)
		}
	}
	return out
}
