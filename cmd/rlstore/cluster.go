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
	"sync/atomic"
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
	fs.Var(newOneOf(&f.Unreachable, server.DefaultOwnerUnreachable.String(), "error", "local", "allow", "deny"), "owner-unreachable", "`error|local|allow|deny`: the reply when a key's owner does not answer within --cluster-timeout: an error (-CLUSTERDOWN), a decision from this node's own state, admit, or deny")
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

// clusterNode is a started cluster membership with its peer pool.
type clusterNode struct {
	ml    *cluster.Membership
	peers *cluster.Peers
	mover *cluster.Peers      // the handoff's connections: see server.ClusterConfig.Mover
	state *cluster.LateState  // the server's policies, once it exists
	srv   *lateServer         // the server, once it exists, told of membership changes
	mf    *cluster.MemberFile // saves the known members in --data-dir; nil without one
	cfg   clusterFlags
	log   *slog.Logger
}

// startCluster listens on the RESP address (so that its port is known to
// advertise), starts gossip and returns what the server needs. tlsLn and
// cs are the TLS port and its certificates, nil without --tls-port.
func startCluster(c config, log *slog.Logger, tlsLn net.Listener, cs *certs) (net.Listener, *clusterNode, *server.ClusterConfig, error) {
	keys, err := c.Cluster.keys()
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", c.addr())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen on %s: %w", c.addr(), err)
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
	state := &cluster.LateState{}
	srv := &lateServer{}
	mf, remembered, err := rememberMembers(c, name, log)
	if err != nil {
		_ = ln.Close()
		return nil, nil, nil, err
	}
	ml, err := cluster.New(cluster.Config{NodeName: name, BindAddr: bind, AdvertiseAddr: c.Cluster.Advertise,
		RESPAddr: resp, TLSAddr: tlsAddr, Seeds: c.Cluster.seeds(), Remembered: remembered, Bootstrap: c.Cluster.Bootstrap,
		Keys: keys, Timing: timing, Logger: log, State: state, OnChange: srv.changed, Known: mf.Known()})
	if err != nil {
		_ = ln.Close()
		if mf != nil {
			mf.Close()
		}
		return nil, nil, nil, err
	}
	secret, old := c.clusterSecrets(keys, log)
	pc := cluster.PeersConfig{Name: name, Secret: secret, Timeout: c.Cluster.Timeout}
	if c.Cluster.TLS {
		pc.TLS, pc.TLSAddr = cs.peerConfig, func(addr string) (string, bool) { return ml.View().TLSAddr(addr) }
	}
	peers := cluster.NewPeers(pc)
	mc := pc
	mc.Conns, mc.Timeout = 1, max(pc.Timeout, moverTimeout)
	mover := cluster.NewPeers(mc)
	u, _ := server.ParseUnreachable(c.Cluster.Unreachable) // validated by its flag
	log.Info("cluster: joined gossip", "node", name, "gossip", ml.GossipAddr(), "resp", resp, "tls", tlsAddr,
		"seeds", c.Cluster.seeds(), "remembered", remembered, "bootstrap", c.Cluster.Bootstrap, "encrypted", len(keys) > 0, "tls_cluster", c.Cluster.TLS, "owner_unreachable", u.String())
	cn := &clusterNode{ml: ml, peers: peers, mover: mover, state: state, srv: srv, mf: mf, cfg: c.Cluster, log: log}
	cc := &server.ClusterConfig{View: ml.View, Forwarder: peers, Mover: mover, Secret: secret, OldSecrets: old,
		OwnerUnreachable: u, Redirect: c.Cluster.Redirect, Broadcast: ml.Broadcast, Joins: len(c.Cluster.seeds())+len(remembered) > 0,
		Leave: cn.leave, Lease: ml.Lease(), Forget: ml.Forget}
	return ln, cn, cc, nil
}

// moverTimeout bounds one chunk of a handoff's copy (at most 256 KiB) or
// its done, at least --cluster-timeout.
const moverTimeout = 5 * time.Second

// lateServer passes membership changes to the server once it exists: the
// server needs the membership first. Until then the server takes the
// newest view when it starts.
type lateServer struct{ p atomic.Pointer[server.Server] }

func (l *lateServer) changed(cluster.View) {
	if s := l.p.Load(); s != nil {
		s.ClusterChanged()
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
// first leaves the cluster (leave, the server's ClusterConfig.Leave), as
// the SHUTDOWN command's does, then drains clients; then the node leaves
// gossip.
type clusterStopper struct {
	srv *server.Server
	cn  *clusterNode
}

func (cs clusterStopper) Shutdown(ctx context.Context) error {
	err := cs.srv.Shutdown(ctx)
	cs.cn.close()
	return err
}

func (cs clusterStopper) Close() error {
	cs.cn.close()
	return cs.srv.Close()
}

// leave hands this node's slots over, then tells every member it leaves.
// Both share --cluster-leave-timeout. While the slots are handed over,
// this node still owns them in every table: it serves each until its cut,
// and then forwards its requests to the new owner, which serves them
// ahead of its own table. Once the members have heard of the leave they
// route to the new owners themselves.
func (cn *clusterNode) leave(srv *server.Server) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), cn.cfg.LeaveTimeout)
	defer cancel()
	if err := srv.HandOff(ctx); err != nil {
		cn.log.Warn("cluster: not every slot was handed over in time; their new owners serve them from what they have", "err", err)
	}
	if err := cn.ml.Leaving(max(cn.cfg.LeaveTimeout-time.Since(start), time.Second)); err != nil {
		cn.log.Warn("cluster: not every member heard that this node leaves", "err", err)
	}
	// The members have been told, but each rebuilds its slot table on its
	// own goroutine: keep serving (forwarding) what they send until they
	// stop, before the drain starts closing their connections.
	srv.QuietHops(leaveQuiet, leaveGrace)
	// Cluster-aware clients still send this node the slots their maps say
	// it owns, until they reload them: keep forwarding those too.
	srv.QuietClients(leaveClientQuiet, leaveClientGrace)
}

// A leaving node serves on after telling every member until no member has
// forwarded it anything for leaveQuiet, at most leaveGrace: far longer than
// a member takes to rebuild its table (well under a millisecond at 10
// nodes), and without load it does not wait the whole grace.
const (
	leaveQuiet = 50 * time.Millisecond
	leaveGrace = 250 * time.Millisecond
)

// Then it serves on until its clients have sent it nothing to forward for
// leaveClientQuiet, at most leaveClientGrace: longer than the slot-map
// reload interval docs/clients.md gives cluster-aware clients (0.5 s,
// client.ClusterReloadInterval), so that they reload before it goes.
const (
	leaveClientQuiet = 600 * time.Millisecond
	leaveClientGrace = 3 * time.Second
)

func (cn *clusterNode) close() {
	cn.peers.Close()
	cn.mover.Close()
	if err := cn.ml.Close(time.Second); err != nil {
		cn.log.Warn("cluster: leaving gossip", "err", err)
	}
	if cn.mf != nil {
		cn.mf.Close()
	}
}
