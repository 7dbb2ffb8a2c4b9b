package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/server"
)

// regionFlags are the regions' options (docs/regions.md).
type regionFlags struct {
	Name      string
	Peers     string // NAME=host:port,…
	Sync      time.Duration
	Escrow    float64
	Reserve   float64
	Partition string // share|deny
	MaxSkew   time.Duration
	Local     string // comma-separated glob patterns
	MaxKeys   int    // 0: no limit
}

func (f *regionFlags) define(fs *flag.FlagSet) {
	d := region.Defaults(0, 1)
	fs.StringVar(&f.Name, "region", "", "`name` of this region: with --region-peers, SLIDE and FIXED keys are global, one limit shared by every region and decided here with no cross-region round trip (docs/regions.md); empty: no regions")
	fs.StringVar(&f.Peers, "region-peers", "", "every other region, `NAME=host:port,...`: the RESP address of each (its --tls-port with --tls-cluster yes), reached with the node-to-node handshake (--cluster-key or --cluster-secret)")
	fs.Var(newSeconds(&f.Sync, server.DefaultRegionSync), "region-sync", "`duration` between exchanges with the other regions (100ms); a region also syncs early when a key has used half its escrow")
	fs.Float64Var(&f.Escrow, "region-escrow", d.Escrow, "α, a `fraction` in (0, 1]: a region may have α·L/R admitted units no other region has acknowledged; all regions together admit at most L + (R−1)·max(1, ⌊α·L/R⌋) ≤ (1+α)·L in any window")
	fs.Float64Var(&f.Reserve, "region-reserve", d.Reserve, "β, a `fraction` in [0, 1]: of each window a region may admit β·L/R with no acknowledgements (during a partition), and every other region counts that much as spent")
	fs.Var(newOneOf(&f.Partition, "share", "share", "deny"), "region-partition", "`share|deny`: once a region's escrow is spent and acknowledgements are late, admit from its reserve (share), or deny (deny: as --region-reserve 0)")
	fs.Var(newSeconds(&f.MaxSkew, d.MaxSkew), "region-max-skew", "the `duration` two regions' clocks may differ by at most: the bound assumes it (1s); the measured skew is in INFO regions")
	fs.IntVar(&f.MaxKeys, "region-max-keys", server.DefaultRegionMaxKeys, "maximum `number` of global keys held only for other regions (this region admitted none of them, so --max-keys does not count them); beyond it, other regions' units of new keys are refused until there is room (they stay within the sender's escrow); 0: no limit")
	fs.StringVar(&f.Local, "region-local", "", "glob `patterns`, comma-separated, of keys decided per region rather than globally (e.g. \"local:*,session:*\"); TOKEN, LEAKY, LOG and CL.THROTTLE keys, and RL.RESERVE, RL.REFUND and RL.ACQUIRE, must match one")
}

func (f regionFlags) on() bool { return f.Name != "" || f.Peers != "" }

// takesSecrets reports whether the cluster options given are only its
// secrets and --tls-cluster, and the regions use them: --cluster-key,
// --cluster-keyring, --cluster-secret, --cluster-secret-file and
// --tls-cluster need no cluster then.
func (f regionFlags) takesSecrets(c clusterFlags) bool {
	if !f.on() || c.on() || c.NodeName != "" || c.Advertise != "" || c.Bootstrap {
		return false
	}
	if c.Key != "" && c.Keyring != "" {
		return false
	}
	_, err := c.keys()
	return err == nil
}

// peers parses --region-peers.
func (f regionFlags) peers() ([]server.RegionPeer, error) {
	var out []server.RegionPeer
	for _, p := range strings.Split(f.Peers, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		name, addr, ok := strings.Cut(p, "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("--region-peers: %q is not NAME=host:port", p)
		}
		out = append(out, server.RegionPeer{Name: name, Addr: addr})
	}
	return out, nil
}

func (f regionFlags) validate() error {
	if !f.on() {
		return nil
	}
	peers, err := f.peers()
	switch {
	case err != nil:
		return err
	case f.Name == "" || len(peers) == 0:
		return errors.New("--region and --region-peers go together")
	case strings.Contains(f.Name, "/"):
		return errors.New(server.ErrRegionNodeName)
	case !(f.Escrow > 0 && f.Escrow <= 1):
		return errors.New("--region-escrow must be in (0, 1]")
	case !(f.Reserve >= 0 && f.Reserve <= 1):
		return errors.New("--region-reserve must be in [0, 1]")
	case f.MaxKeys < 0:
		return errors.New("--region-max-keys must not be negative")
	case f.Sync <= 0 || f.MaxSkew < 0:
		return errors.New("--region-sync must be positive and --region-max-skew not negative")
	}
	return nil
}

// regionConfig returns the server's region setup, nil without --region.
// The exchanges go on connections of their own, proving the cluster's
// secret as nodes do, over mutual TLS with --tls-cluster yes (to the
// --tls-port each --region-peers entry names; a region then takes other
// regions' batches over TLS only). The returned close ends them.
func regionConfig(c config, log *slog.Logger, cs *certs) (*server.RegionConfig, func(), error) {
	f := c.Region
	if !f.on() {
		return nil, func() {}, nil
	}
	peers, _ := f.peers() // validated
	keys, err := c.Cluster.keys()
	if err != nil {
		return nil, nil, err
	}
	addrs := []string{c.Bind}
	for _, p := range peers {
		addrs = append(addrs, p.Addr)
	}
	if !c.hasClusterSecret() && !allLoopback(addrs...) {
		return nil, nil, errors.New("--region-peers off loopback needs --cluster-key, --cluster-secret or --requirepass: regions prove it to each other")
	}
	secret, old := c.clusterSecrets(keys, log)
	pc := cluster.PeersConfig{Name: f.Name, Secret: secret, Conns: 1, Timeout: time.Second}
	if c.Cluster.TLS { // validated: --tls-port and --tls-ca-cert-file are set, so cs is
		pc.TLS, pc.TLSAddr = cs.peerConfig, func(addr string) (string, bool) { return addr, true }
	}
	fw := cluster.NewPeers(pc)
	rc := &server.RegionConfig{Name: f.Name, Peers: peers, Sync: f.Sync, Escrow: f.Escrow, Reserve: f.Reserve,
		Deny: f.Partition == "deny", MaxSkew: f.MaxSkew, Secret: secret, OldSecrets: old, Forwarder: fw, TLS: c.Cluster.TLS,
		MaxKeys: f.MaxKeys}
	if rc.MaxKeys == 0 {
		rc.MaxKeys = -1 // no limit: the server reads 0 as its default
	}
	if rc.Reserve == 0 && !rc.Deny {
		rc.Deny = true // a reserve of 0 is deny: the server reads 0 as its default
	}
	for _, p := range strings.Split(f.Local, ",") {
		if p = strings.TrimSpace(p); p != "" {
			rc.Local = append(rc.Local, p)
		}
	}
	log.Info("regions", "region", f.Name, "peers", f.Peers, "escrow", f.Escrow, "reserve", rc.Reserve, "partition", f.Partition, "tls", rc.TLS)
	return rc, fw.Close, nil
}
