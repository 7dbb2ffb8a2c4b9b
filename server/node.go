package server

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/route"
)

// ClusterConfig makes a Server one node of a cluster: cmd/rlstore (NewNode)
// builds the membership and the peer pools and passes them here; the
// server routes, forwards and answers the cluster commands
// (server/internal/route). See route.ClusterConfig for its fields.
type ClusterConfig = route.ClusterConfig

// Unreachable is what a node does with a request whose owner it cannot reach.
type Unreachable = route.Unreachable

// The choices of --owner-unreachable (see route.Unreachable).
const (
	UnreachableError = route.UnreachableError // reply -CLUSTERDOWN: the client's own fail-open or fail-closed rule applies
	UnreachableLocal = route.UnreachableLocal // decide at the slot's substitute, one node per partition side
	UnreachableAllow = route.UnreachableAllow // admit without deciding (fail open)
	UnreachableDeny  = route.UnreachableDeny  // deny without deciding (fail closed)
)

// DefaultOwnerUnreachable is error (see route.DefaultOwnerUnreachable).
const DefaultOwnerUnreachable = route.DefaultOwnerUnreachable

// ParseUnreachable reads a --owner-unreachable value.
func ParseUnreachable(s string) (Unreachable, error) { return route.ParseUnreachable(s) }

// attachCluster makes the router, and with a cluster the stack below it
// (the handoff, the replicator), and registers the node-to-node and
// cluster commands, which answer without a cluster too.
func (s *Server) attachCluster() error {
	f := routeFront{s}
	rt, err := route.New(route.Config{Cluster: s.cfg.Cluster, Started: s.started, Pipeline: &s.pipe, Table: s.table,
		Slots: &s.pipe.Slots, Store: s.cfg.Store, Logger: s.log, Clock: s.cfg.Clock, UnixNano: s.unixNano,
		Runner: pipeline{s}, Conns: f, Gate: f, Keys: f, Regions: f, Policies: f})
	if err != nil {
		return err
	}
	s.rt = rt
	s.registerSpecified(rt.Commands())
	if s.ho = rt.Handoff(); s.ho != nil {
		s.repl = s.ho.Replicator()
	}
	return nil
}

// mode is HELLO's mode and INFO's redis_mode, as Redis names them.
func (s *Server) mode() string {
	if s.ho == nil {
		return "standalone"
	}
	return "cluster"
}

// ClusterChanged makes the server take the membership's current view now,
// running the handoff for it; cmd/rlstore calls it from the membership's
// OnChange. Without it a change is taken by the next request that routes.
func (s *Server) ClusterChanged() {
	if s.ho != nil {
		s.ho.View()
	}
}

// HandOff hands every slot this node holds to the node that owns it
// without this one, for a graceful leave (handoff.Node.HandOff).
func (s *Server) HandOff(ctx context.Context) error {
	if s.ho == nil {
		return nil
	}
	return s.ho.HandOff(ctx)
}

// QuietHops waits until no other node has sent this one a request for
// quiet, or max has passed (route.Router.QuietHops).
func (s *Server) QuietHops(quiet, max time.Duration) {
	if s.ho != nil {
		s.rt.QuietHops(quiet, max)
	}
}

// QuietClients waits until this node has forwarded nothing for quiet, or
// max has passed (route.Router.QuietClients).
func (s *Server) QuietClients(quiet, max time.Duration) {
	if s.ho != nil {
		s.rt.QuietClients(quiet, max)
	}
}

// LocalState is every policy version this node holds, for a push/pull
// exchange. With Merge it makes the server a cluster.StateSync.
func (s *Server) LocalState() []byte { return s.rt.LocalState() }

// Merge applies the policy versions in b that are newer than this node's.
func (s *Server) Merge(b []byte) { s.rt.Merge(b) }

// policyChanged records a change of a policy made on this node and
// broadcasts it to the cluster's other nodes.
func (s *Server) policyChanged(name, def string, deleted bool) {
	if s.rt != nil {
		s.rt.PolicyChanged(name, def, deleted)
	}
}

// infoCluster is INFO's cluster section.
func (s *Server) infoCluster() []core.Pair { return s.rt.InfoPairs() }

// routeFront is the server as the router's delegates (route.Conns,
// route.Gate, route.Keys, route.Regions, route.Policies); its Runner is
// the pipeline's.
type routeFront struct{ s *Server }

func (f routeFront) Holding(x *core.Session) bool    { return f.s.clientOf(x).dur.Holding() }
func (f routeFront) CloseAfterReply(x *core.Session) { f.s.closeAfterReply(f.s.clientOf(x)) }

// The handshake counts as a user of its own, auth.PeerUser, at the
// client's address.

func (f routeFront) Blocked(addr string, now time.Time) string {
	if wait := f.s.guard.Blocked(addr, auth.PeerUser, now); wait > 0 {
		return auth.BlockedReply(wait)
	}
	return ""
}

func (f routeFront) Admit(addr string, now time.Time) string {
	if _, wait := f.s.guard.Admit(addr, auth.PeerUser, now); wait > 0 {
		return auth.BlockedReply(wait)
	}
	return ""
}

func (f routeFront) Failed(addr string, now time.Time) { f.s.guard.Failed(addr, now) }
func (f routeFront) Passed(addr string)                { f.s.guard.Passed(addr, auth.PeerUser) }
func (f routeFront) CountFailure()                     { f.s.users.CountFailure() }
func (f routeFront) Login(x *core.Session)             { f.s.users.Login(x, nil) }

func (f routeFront) Live(key []byte, now int64) bool {
	_, _, live := f.s.lookup(key, now)
	return live
}

func (f routeFront) Regional() bool { return f.s.reg != nil }
func (f routeFront) Keys() [][]byte { return f.s.reg.Keys() }
func (f routeFront) PeerRegion(x *core.Session, payload []byte) {
	f.s.peerRegion(f.s.clientOf(x), payload) // region.go
}

// ApplyRemote makes another node's change of a policy here, durable as a
// local one, while current says it is still the version recorded for it:
// under the write lock that every change of a policy takes, so the last
// applied is the newest.
func (f routeFront) ApplyRemote(name, def string, deleted bool, current func() bool) {
	s := f.s
	s.pol.Lock()
	defer s.pol.Unlock()
	if !current() {
		return
	}
	old := s.pol.Get([]byte(name))
	if deleted {
		if old != nil {
			s.dropPolicyLocked(name, old)
		}
		return
	}
	p, err := policy.Decode(name, def)
	if err != nil {
		s.log.Error("cluster: a peer's policy does not parse here; ignored", "policy", name, "err", err)
		return
	}
	s.cfg.Store.Charge(decide.PolicyBytes(p) - decide.PolicyBytes(old)) // a peer's policy is kept even past the limits, as a loaded one is
	if st := s.cfg.Policies; st != nil {
		if err := st.Save(p); err != nil {
			s.log.Error("cluster: saving a peer's policy failed", "policy", p.Name, "err", err)
		}
	}
	s.pol.SetLocked(p)
}

func (s *Server) dropPolicyLocked(name string, old *policy.Policy) {
	if st := s.cfg.Policies; st != nil {
		if _, err := st.Delete(name); err != nil {
			s.log.Error("cluster: deleting a policy a peer deleted failed", "policy", name, "err", err)
		}
	}
	s.pol.DeleteLocked(name)
	s.cfg.Store.Charge(-decide.PolicyBytes(old))
}

// NodeConfig is what NewNode builds a cluster node from.
type NodeConfig struct {
	// Server is the server's Config. Its Listener (or Addr) is the node's
	// RESP port; its Cluster holds the options (Secret, OldSecrets,
	// Redirect, OwnerUnreachable, and Replicas without Ship), and NewNode
	// fills in the rest from the membership and the pools it makes:
	// View, Forwarder, Mover, Broadcast, Lease, Forget, Known, Joins, Leave
	// and Replicas.Ship.
	Server Config
	// Gossip is the membership's config; NewNode sets its State and
	// OnChange to the server.
	Gossip cluster.Config
	// Peers configures the forwards' connections. The handoff's (the
	// mover) and the replicas' shipments are the same with one
	// connection each. A TLS pool with no TLSAddr maps a peer's RESP
	// address to its TLS one through the membership.
	Peers cluster.PeersConfig
	// MoverTimeout bounds one chunk of a handoff's copy, or its done:
	// at least Peers.Timeout. Default DefaultMoverTimeout.
	MoverTimeout time.Duration
	// Leaves makes a graceful stop hand this node's slots over and tell
	// the members it leaves, within LeaveTimeout (see Node.leave), before
	// the server drains; without it the node just leaves gossip on Close.
	Leaves       bool
	LeaveTimeout time.Duration
	// Wrap, if set, stands between the server and each pool it is given
	// (the forwards', the mover's, the shipments'): a test holds a
	// forward back with it.
	Wrap func(pool Pool, f cluster.Forwarder) cluster.Forwarder
}

// Pool names a node's pools of peer connections, for NodeConfig.Wrap.
type Pool int

// A node's pools.
const (
	PoolForward Pool = iota // the forwarded requests'
	PoolMover               // the handoff's copies
	PoolShip                // the replicas' shipments
)

// DefaultMoverTimeout is NodeConfig.MoverTimeout's default: a handoff's
// chunk is at most 256 KiB.
const DefaultMoverTimeout = 5 * time.Second

// Node is a cluster node: its server, its membership and its pools of
// peer connections, built in one place so that cmd/rlstore and the tests
// build a node the same way. Serve its Server; Close it after the server.
type Node struct {
	Server     *Server
	Membership *cluster.Membership
	Peers      *cluster.Peers // the forwards'
	Mover      *cluster.Peers // the handoff's
	Ship       *cluster.Peers // the replicas' shipments; nil without replicas

	cfg NodeConfig
}

// NewNode prepares the membership, makes the pools and the server on
// them, then starts gossip with the server as its state and the one told
// of each change, and returns the node ready to serve. The server is
// built on the prepared membership's view (this node alone) and takes
// the view of the members it meets as gossip starts, as it takes any
// later change.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.Server.Cluster == nil {
		return nil, errors.New("server: a node needs Server.Cluster")
	}
	n := &Node{cfg: cfg}
	gc := cfg.Gossip
	ml, err := cluster.Prepare(gc)
	if err != nil {
		return nil, err
	}
	n.Membership = ml
	n.makePools()
	scfg := cfg.Server
	cc := *scfg.Cluster
	cc.View, cc.Broadcast, cc.Lease, cc.Forget = ml.View, ml.Broadcast, ml.Lease(), ml.Forget
	cc.Known = func() []string {
		var names []string
		for _, k := range ml.Known().Members() {
			names = append(names, k.Name)
		}
		return names
	}
	cc.KnownSet = ml.Known().All
	cc.Forwarder, cc.Mover = n.wrap(PoolForward, n.Peers), n.wrap(PoolMover, n.Mover)
	cc.Joins = len(gc.Seeds)+len(gc.Remembered) > 0
	if cfg.Leaves {
		cc.Leave = n.leave
	}
	if cc.Replicas != nil {
		rc := *cc.Replicas
		rc.Ship = n.wrap(PoolShip, n.Ship)
		cc.Replicas = &rc
	}
	scfg.Cluster = &cc
	if n.Server, err = New(scfg); err != nil {
		_ = n.Close(0)
		return nil, err
	}
	srv := n.Server
	if err := ml.Start(asyncState{srv}, func(v cluster.View) { srv.ClusterChanged(); n.forgetGone(v) }); err != nil {
		_ = srv.Close()
		_ = n.Close(0)
		return nil, err
	}
	return n, nil
}

// asyncState is the server as the membership's state. Merge runs the
// server's on its own goroutine, as memberlist's callbacks must not
// block (a policy is written to disk).
type asyncState struct{ s *Server }

func (a asyncState) LocalState() []byte { return a.s.LocalState() }
func (a asyncState) Merge(b []byte)     { go a.s.Merge(b) }

// forgetGone closes the connections to the members v says left or died
// (their deaths confirmed): nothing is sent to them any more, and a dead
// peer's sockets would otherwise stay open (CLOSE-WAIT) for the process's
// life. An address a member of v still has (a restart that reused it) is
// kept; one dialled again later gets a new connection.
func (n *Node) forgetGone(v cluster.View) {
	for _, m := range v.Gone {
		if m.Addr == "" || addrInView(v, m.Addr) {
			continue
		}
		n.Peers.Forget(m.Addr)
		n.Mover.Forget(m.Addr)
		if n.Ship != nil {
			n.Ship.Forget(m.Addr)
		}
	}
}

// addrInView reports whether a member or a table node of v has addr.
func addrInView(v cluster.View, addr string) bool {
	for _, m := range v.Members {
		if m.Addr == addr {
			return true
		}
	}
	return v.Table != nil && slices.ContainsFunc(v.Table.Nodes(), func(nd cluster.Node) bool { return nd.Addr == addr })
}

// makePools makes the pools of peer connections.
func (n *Node) makePools() {
	pc := n.cfg.Peers
	if pc.TLS != nil && pc.TLSAddr == nil {
		ml := n.Membership
		pc.TLSAddr = func(addr string) (string, bool) { return ml.View().TLSAddr(addr) }
	}
	n.Peers = cluster.NewPeers(pc)
	one := pc
	one.Conns = 1 // the mover: one stream per peer; the shipments: one at a time to each backup
	n.Mover = cluster.NewPeers(moverConfig(one, n.cfg.MoverTimeout))
	if n.cfg.Server.Cluster.Replicas != nil {
		n.Ship = cluster.NewPeers(one)
	}
}

// moverConfig is pc with the mover's timeout: timeout (default
// DefaultMoverTimeout), and at least pc's.
func moverConfig(pc cluster.PeersConfig, timeout time.Duration) cluster.PeersConfig {
	if timeout <= 0 {
		timeout = DefaultMoverTimeout
	}
	pc.Timeout = max(pc.Timeout, timeout)
	return pc
}

func (n *Node) wrap(p Pool, f *cluster.Peers) cluster.Forwarder {
	if n.cfg.Wrap == nil {
		return f
	}
	return n.cfg.Wrap(p, f)
}

// Close closes the pools and leaves gossip, telling the members for at
// most timeout (none: it goes at once, as a crash would).
func (n *Node) Close(timeout time.Duration) error {
	n.Peers.Close()
	n.Mover.Close()
	if n.Ship != nil {
		n.Ship.Close()
	}
	if timeout <= 0 {
		n.Membership.Kill()
		return nil
	}
	return n.Membership.Close(timeout)
}

// leave hands this node's slots over, then tells every member it leaves.
// Both share NodeConfig.LeaveTimeout. While the slots are handed over,
// this node still owns them in every table: it serves each until its cut,
// and then forwards its requests to the new owner, which serves them
// ahead of its own table. Once the members have heard of the leave they
// route to the new owners themselves.
func (n *Node) leave() {
	srv, start := n.Server, time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaveTimeout)
	defer cancel()
	log := srv.log
	if err := srv.HandOff(ctx); err != nil {
		log.Warn("cluster: not every slot was handed over in time; their new owners serve them from what they have", "err", err)
	}
	if err := n.Membership.Leaving(max(n.cfg.LeaveTimeout-time.Since(start), time.Second)); err != nil {
		log.Warn("cluster: not every member heard that this node leaves", "err", err)
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
