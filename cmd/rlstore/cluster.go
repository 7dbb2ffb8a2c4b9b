package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server"
)

// clusterFlags are the cluster's options. The cluster is on when
// --cluster-addr or --join is given.
type clusterFlags struct {
	NodeName     string
	Addr         string // gossip bind host:port
	Advertise    string // gossip host:port told to peers
	Join         string // comma-separated gossip seeds
	Key          string // base64 gossip key
	Keyring      string // file of base64 keys
	Unreachable  string
	Redirect     bool
	Timeout      time.Duration
	Timing       string
	LeaveTimeout time.Duration
	TLS          bool   // --tls-cluster: dial peers over TLS, to their --tls-port
	Bootstrap    bool   // --cluster-bootstrap: serve alone before meeting a member
	Secret       string // what nodes prove to each other, when not the key (trust.go)
	SecretFile   string
	Insecure     bool // gossip beyond loopback without a key
}

func (f *clusterFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.NodeName, "node-name", "", "this node's `name` in the cluster, unique among its members; keep it across restarts so the node gets its slots back; default: the host name and --port")
	fs.StringVar(&f.Addr, "cluster-addr", "", "`host:port` for cluster gossip (TCP and UDP); setting it or --join turns the cluster on; default with --join: 127.0.0.1:7946")
	fs.StringVar(&f.Advertise, "cluster-advertise", "", "gossip `host:port` other nodes are told to use, when it differs from --cluster-addr (NAT, 0.0.0.0)")
	fs.StringVar(&f.Join, "join", "", "comma-separated gossip `host:port`s of members to join; they are retried while any is missing")
	fs.StringVar(&f.Key, "cluster-key", "", "base64 `key` of 16, 24 or 32 bytes (openssl rand -base64 32) that encrypts gossip and that nodes prove to each other; every node needs the same")
	fs.StringVar(&f.Keyring, "cluster-keyring", "", "`file` of base64 cluster keys, one per line, the first encrypting; for rotating keys (instead of --cluster-key)")
	fs.Var(newOneOf(&f.Unreachable, server.DefaultOwnerUnreachable.String(), "error", "local", "allow", "deny"), "owner-unreachable", "`error|local|allow|deny`: the reply when a key's owner does not answer within --cluster-timeout: an error (-CLUSTERDOWN), a decision at one node per partition side (the slot's substitute), admit (fail open, no bound), or deny")
	fs.Var(newYesNo(&f.Redirect, false), "cluster-redirect", "`yes|no`: with yes, answer -MOVED slot host:port for a key owned elsewhere instead of forwarding it")
	fs.Var(newSeconds(&f.Timeout, cluster.DefaultPeerTimeout), "cluster-timeout", "`duration` a forwarded request may take before --owner-unreachable applies (1s, 500ms)")
	fs.Var(newOneOf(&f.Timing, "lan", "lan", "fast"), "cluster-timing", "`lan|fast`: failure detection pace. lan: a crashed node is declared dead in about 1.5-2.5 s; fast: about 0.5-1 s, for tests on one machine")
	fs.Var(newYesNo(&f.TLS, false), "tls-cluster", "`yes|no`: with yes, dial peers over TLS to the --tls-port each advertises, presenting --tls-cert-file and checking theirs against --tls-ca-cert-file; needs --tls-port and --tls-ca-cert-file on every node; with --region, region links too (--region-peers names each region's --tls-port)")
	fs.Var(newYesNo(&f.Bootstrap, false), "cluster-bootstrap", "`yes|no`: with yes, serve at once even alone, and forget the members --data-dir remembers: start a new cluster from this node. With no, a node given --join, or whose --data-dir remembers members, answers keyed commands with -CLUSTERDOWN until it has met one")
	fs.StringVar(&f.Secret, "cluster-secret", "", "`secret` nodes prove to each other in their handshake (a key derived from it, never the secret itself); default: the --cluster-key, else --requirepass. Prefer --cluster-secret-file: on the command line any local user can read it")
	fs.StringVar(&f.SecretFile, "cluster-secret-file", "", "`file` whose contents (less a trailing newline) are the --cluster-secret")
	fs.Var(newYesNo(&f.Insecure, false), "cluster-insecure", "`yes|no`: with yes, gossip on a non-loopback address without --cluster-key; UNSAFE: any host that can reach it can join the cluster and take slots")
	fs.Var(newSeconds(&f.LeaveTimeout, 10*time.Second), "cluster-leave-timeout", "`duration` a graceful leave (SIGTERM or SHUTDOWN) may spend handing this node's slots over before it goes anyway")
}

// on reports whether the cluster is configured.
func (f clusterFlags) on() bool { return f.Addr != "" || f.Join != "" }

func (f clusterFlags) validate() error {
	if !f.on() {
		if f.NodeName != "" || f.Key != "" || f.Keyring != "" || f.Advertise != "" || f.TLS || f.Bootstrap ||
			f.Secret != "" || f.SecretFile != "" {
			return errors.New("cluster options need --cluster-addr or --join")
		}
		return nil
	}
	if f.Key != "" && f.Keyring != "" {
		return errors.New("give --cluster-key or --cluster-keyring, not both")
	}
	if f.Key != "" {
		if _, err := cluster.ParseKey(f.Key); err != nil {
			return fmt.Errorf("--cluster-key: %w", err)
		}
	}
	if f.Timeout <= 0 {
		return errors.New("--cluster-timeout must be positive")
	}
	return nil
}

func (f clusterFlags) keys() ([][]byte, error) {
	switch {
	case f.Keyring != "":
		return cluster.ReadKeyring(f.Keyring)
	case f.Key != "":
		k, err := cluster.ParseKey(f.Key)
		return [][]byte{k}, err
	}
	return nil, nil
}

func (f clusterFlags) seeds() []string {
	var out []string
	for _, s := range strings.Split(f.Join, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// clusterSetup is what the cluster's flags make ready before the node is
// built (server.NewNode): the RESP listener, whose port the node
// advertises, the member file, and the node's config but for its server's.
type clusterSetup struct {
	ln   net.Listener
	mf   *cluster.MemberFile // saves the known members in --data-dir; nil without one
	node server.NodeConfig
	cfg  clusterFlags
	log  *slog.Logger
}

// prepareCluster listens on the RESP address (so that its port is known to
// advertise) and returns what server.NewNode needs. tlsLn and cs are the
// TLS port and its certificates, nil without --tls-port.
func prepareCluster(c config, log *slog.Logger, tlsLn net.Listener, cs *certs) (*clusterSetup, error) {
	keys, err := c.Cluster.keys()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", c.addr())
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", c.addr(), err)
	}
	resp := respAddr(ln.Addr().String(), c.Cluster.Advertise)
	name := c.Cluster.NodeName
	if name == "" {
		host, _ := os.Hostname()
		name = host + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	timing := cluster.DefaultTiming()
	if c.Cluster.Timing == "fast" {
		timing = cluster.TestTiming()
	}
	bind := c.Cluster.Addr
	if bind == "" {
		bind = cluster.DefaultBindAddr
	}
	tlsAddr := ""
	if tlsLn != nil {
		tlsAddr = respAddr(tlsLn.Addr().String(), c.Cluster.Advertise)
	}
	mf, remembered, err := rememberMembers(c, name, log)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	deaths, err := rememberDeaths(c, log)
	if err != nil {
		_ = ln.Close()
		if mf != nil {
			mf.Close()
		}
		return nil, err
	}
	procs, err := rememberProcesses(c)
	if err != nil {
		_ = ln.Close()
		if mf != nil {
			mf.Close()
		}
		return nil, err
	}
	secret, old := c.clusterSecrets(keys, log)
	pc := cluster.PeersConfig{Name: name, Secret: secret, Timeout: c.Cluster.Timeout}
	if c.Cluster.TLS {
		pc.TLS = cs.peerConfig // NewNode maps each peer to its TLS port through the membership
	}
	u, _ := server.ParseUnreachable(c.Cluster.Unreachable) // validated by its flag
	return &clusterSetup{ln: ln, mf: mf, cfg: c.Cluster, log: log, node: server.NodeConfig{
		Gossip: cluster.Config{NodeName: name, BindAddr: bind, AdvertiseAddr: c.Cluster.Advertise,
			RESPAddr: resp, TLSAddr: tlsAddr, Seeds: c.Cluster.seeds(), Remembered: remembered, Bootstrap: c.Cluster.Bootstrap,
			Keys: keys, Timing: timing, Logger: log, Known: mf.Known(), Deaths: deaths, Processes: procs},
		Peers:        pc,
		Leaves:       true,
		LeaveTimeout: c.Cluster.LeaveTimeout,
		Server: server.Config{Cluster: &server.ClusterConfig{Secret: secret, OldSecrets: old,
			OwnerUnreachable: u, Redirect: c.Cluster.Redirect}},
	}}, nil
}

// start builds the node around the server's config scfg, whose Cluster
// holds the cluster's options (and the replicas'), and logs it.
func (cs *clusterSetup) start(scfg server.Config) (*server.Node, error) {
	nc := cs.node
	nc.Server = scfg
	n, err := server.NewNode(nc)
	if err != nil {
		cs.abandon()
		return nil, err
	}
	g, c := nc.Gossip, cs.cfg
	cs.log.Info("cluster: joined gossip", "node", g.NodeName, "gossip", n.Membership.GossipAddr(), "resp", g.RESPAddr, "tls", g.TLSAddr,
		"seeds", g.Seeds, "remembered", g.Remembered, "bootstrap", g.Bootstrap, "encrypted", len(g.Keys) > 0, "tls_cluster", c.TLS,
		"owner_unreachable", scfg.Cluster.OwnerUnreachable.String())
	return n, nil
}

// abandon closes what prepareCluster opened, for a node that does not start.
func (cs *clusterSetup) abandon() {
	_ = cs.ln.Close()
	if cs.mf != nil {
		cs.mf.Close()
	}
}

// rememberMembers opens the member file of --data-dir, if given, and
// returns it with the gossip addresses of the members it remembers, which
// the node rejoins. --cluster-bootstrap forgets them.
func rememberMembers(c config, name string, log *slog.Logger) (*cluster.MemberFile, []string, error) {
	if c.DataDir == "" {
		return nil, nil, nil
	}
	mf, err := cluster.OpenMemberFile(c.DataDir, name, c.Cluster.Bootstrap, log)
	if err != nil {
		return nil, nil, fmt.Errorf("--data-dir %s: %w", c.DataDir, err)
	}
	if c.Cluster.Bootstrap {
		log.Warn("cluster: --cluster-bootstrap: this node starts a new cluster, forgetting the members its data dir remembered")
	}
	return mf, mf.Remembered(), nil
}

// rememberDeaths opens the death file of --data-dir, if given: the lease's
// fences, which a restart must not forget (cluster.Lease.KeepDeaths).
// --cluster-bootstrap forgets them with the members. Without a data dir
// it warns: the cluster's safety assumes every node remembers its fences
// (docs/cluster.md, Assumptions).
func rememberDeaths(c config, log *slog.Logger) (*cluster.DeathFile, error) {
	if c.DataDir == "" {
		log.Warn("cluster: no --data-dir, so a restart forgets which members this node declared dead; " +
			"a majority's fences keep one owner per slot only while they are remembered (docs/cluster.md, Assumptions)")
		return nil, nil
	}
	f, err := cluster.OpenDeathFile(c.DataDir, c.Cluster.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", c.DataDir, err)
	}
	return f, nil
}

// rememberProcesses opens the process file of --data-dir, if given: the
// processes whose store a restart restores (cluster.Lease.Restored), so
// that a node that handed a slot to one of them releases it to this one.
func rememberProcesses(c config) (*cluster.ProcessFile, error) {
	if c.DataDir == "" {
		return nil, nil
	}
	f, err := cluster.OpenProcessFile(c.DataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", c.DataDir, err)
	}
	return f, nil
}

// respAddr is the RESP address peers and clients are told: the listener's,
// unless it listens on every interface, when the gossip advertise host is used.
func respAddr(listen, advertise string) string {
	host, port, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ah, _, err := net.SplitHostPort(advertise); err == nil && ah != "" {
			host = ah
		}
	}
	return net.JoinHostPort(host, port)
}

// clusterStopper stops a cluster node gracefully: the server's Shutdown
// first leaves the cluster (the node's leave, the server's
// ClusterConfig.Leave), as the SHUTDOWN command's does, then drains
// clients; then the node leaves gossip.
type clusterStopper struct {
	srv *server.Server
	cs  *clusterSetup
	n   *server.Node
}

func (c clusterStopper) Shutdown(ctx context.Context) error {
	err := c.srv.Shutdown(ctx)
	c.close()
	return err
}

func (c clusterStopper) Close() error {
	c.close()
	return c.srv.Close()
}

// close leaves gossip and closes the node's connections and the member
// file. It may run more than once.
func (c clusterStopper) close() {
	if err := c.n.Close(time.Second); err != nil {
		c.cs.log.Warn("cluster: leaving gossip", "err", err)
	}
	if c.cs.mf != nil {
		c.cs.mf.Close()
	}
}
