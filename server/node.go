package server

import (
	"context"
	"errors"
	"time"

	"github.com/rlstore/rlstore/cluster"
)

// NodeConfig is what NewNode builds a cluster node from.
type NodeConfig struct {
	// Server is the server's Config. Its Listener (or Addr) is the node's
	// RESP port; its Cluster holds the options (Secret, OldSecrets,
	// Redirect, OwnerUnreachable, and Replicas without Ship), and NewNode
	// fills in the rest from the membership and the pools it makes:
	// View, Forwarder, Mover, Broadcast, Lease, Forget, Joins, Leave and
	// Replicas.Ship.
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
	if err := ml.Start(asyncState{srv}, func(cluster.View) { srv.ClusterChanged() }); err != nil {
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
