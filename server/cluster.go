package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/handoff"
)

// ClusterConfig makes a Server one node of a cluster. cmd/rlstore builds
// the membership and the peer pool and passes them here; the server only
// routes, forwards and answers the cluster commands.
type ClusterConfig struct {
	View      func() *cluster.View // the current membership; required
	Forwarder cluster.Forwarder    // how requests reach other nodes; required
	// Secret is the cluster's shared secret: peers prove they hold its
	// cluster.PeerKey in the handshake. Required, and not empty.
	Secret []byte
	// OldSecrets are secrets still accepted from peers while keys rotate
	// (--cluster-keyring): a node proves Secret and accepts any of these.
	OldSecrets [][]byte
	// OwnerUnreachable decides a request whose owner cannot be reached in
	// time. Default DefaultOwnerUnreachable.
	OwnerUnreachable Unreachable
	// Redirect answers -MOVED slot host:port instead of forwarding.
	Redirect bool
	// Broadcast sends bytes to every other node's Merge (see LocalState);
	// nil keeps policy changes on this node.
	Broadcast func([]byte)
	// Mover carries the handoff's copies of moving slots (RL.PEER IMPORT
	// and DONE) on connections of its own: on Forwarder's they could queue
	// behind forwarded requests that wait, at the peer, for this very
	// handoff's gate to open. Nil uses Forwarder.
	Mover cluster.Forwarder
	// Replicas, if set, ships this node's changes to each slot's backup
	// and keeps the copies shipped to it (--replicas 1).
	Replicas *ReplicaConfig
	// Joins says the node was started with seeds to join, or members it
	// remembers: what it served alone before it first saw another member
	// is not handed over, since the cluster it joins has newer state for
	// those slots.
	Joins bool
	// Lease, if set, is this node's serving lease: keyed commands are
	// served only while it holds, and the slots of a member declared dead
	// only after its TakeoverWait (see server/internal/handoff, lease.go). Nil serves always.
	Lease *cluster.Lease
	// Forget removes a dead member from the known member set for good
	// (RL.CLUSTER FORGET); nil refuses the command.
	Forget func(name string) error
	// Leave, if set, runs first when the server stops gracefully, by
	// Shutdown or by the SHUTDOWN command, while it still serves: it hands
	// this node's slots over and tells the members that it leaves, so
	// that neither way of stopping resets a limit. It is given nothing: the
	// node that sets it (NewNode) holds its server already.
	Leave func()
}

// Unreachable is what a node does with a request whose owner it cannot reach.
type Unreachable int

// The choices of --owner-unreachable.
const (
	UnreachableError Unreachable = iota + 1 // reply -CLUSTERDOWN: the client's own fail-open or fail-closed rule applies
	UnreachableLocal                        // decide here, from this node's state for the key (usually none: a fresh quota)
	UnreachableAllow                        // admit without deciding (fail open)
	UnreachableDeny                         // deny without deciding (fail closed)
)

// DefaultOwnerUnreachable is error: the owner is unreachable only until
// failure detection declares it dead (about 2 s by default), after which
// its slots have a new owner; an error in between lets each client apply
// its own fail-open or fail-closed rule, where local or allow would hand
// out a quota the owner does not know about.
const DefaultOwnerUnreachable = UnreachableError

// ParseUnreachable reads a --owner-unreachable value.
func ParseUnreachable(s string) (Unreachable, error) {
	for u := UnreachableError; u <= UnreachableDeny; u++ {
		if u.String() == s {
			return u, nil
		}
	}
	return 0, fmt.Errorf("owner-unreachable must be local, allow, deny or error, not %q", s)
}

func (u Unreachable) String() string {
	switch u {
	case UnreachableError:
		return "error"
	case UnreachableLocal:
		return "local"
	case UnreachableAllow:
		return "allow"
	case UnreachableDeny:
		return "deny"
	}
	return strconv.Itoa(int(u))
}

func (cc *ClusterConfig) withDefaults() error {
	if cc.View == nil || cc.Forwarder == nil {
		return errors.New("server: a cluster needs a view and a forwarder")
	}
	if len(cc.Secret) == 0 {
		return errors.New("server: a cluster needs a secret for the node-to-node handshake")
	}
	if cc.OwnerUnreachable == 0 {
		cc.OwnerUnreachable = DefaultOwnerUnreachable
	}
	return nil
}

// hop levels: how a request reached this node. Append only: peers of
// another version read them.
const (
	hopClient  = 0 // from a client: route it
	hopForward = 1 // forwarded once: serve it here, whoever owns it now
)

// Replies of the cluster commands, in Redis Cluster's words where it has them.
const (
	errCrossSlot    = "CROSSSLOT Keys in request don't hash to the same slot"
	errNotPeer      = "NOPERM this command is for cluster peers only"
	errPeerAuth     = cluster.PeerRefused
	errNoCluster    = "ERR This instance has cluster support disabled"
	errOwnerUnreach = "CLUSTERDOWN the owner of this key cannot be reached: "
	// errClusterDown is Redis Cluster's reply while its state is fail: here,
	// a node that has not met a member of the cluster it joins.
	errClusterDown = "CLUSTERDOWN The cluster is down"
)

// peerReadBuf is the read buffer a peer's connection keeps between
// requests: a replica shipment's chunk (up to 256 KiB) regrew it from 8 KiB
// each time, a megabyte of garbage a chunk on a busy backup.
const peerReadBuf = 1 << 20

// peerMaxRequest is the largest request a peer that proved the cluster's
// secret may send, whatever --max-request-bytes allows clients: replica
// shipments and handoff copies come in chunks of 256 KiB, and a key whose
// state alone is larger gets a chunk of its own.
const peerMaxRequest = 64 << 20

// peerCommands are the node-to-node commands.
func peerCommands() []command {
	return []command{
		{name: "rl.peer", arity: -3, flags: core.FlagNoAuth | core.FlagNoQueue | core.FlagNoTx, run: cmdPeer, secret: core.HideArgs, group: "cluster",
			summary: "Node-to-node handshake: HELLO name, then AUTH name mac"},
		{name: "rl.hop", arity: -4, flags: core.FlagNoQueue, run: cmdHop, wraps: 3, secret: core.HideArgs, group: "cluster",
			summary: "A request forwarded by another node: RL.HOP level resp command [arg ...]"},
	}
}

// cmdPeer is the handshake, RL.PEER HELLO and AUTH (peerauth.go), and,
// on a peer's connection only, the replicas' COPY, DELTA and SYNC
// (server/internal/replica, copies.go), an old owner's SEED
// and the handoff's IMPORT, DONE, PULL and RELEASED (package handoff:
// seed.go, peer.go, restore.go, release.go). On a client's connection every other subcommand is
// refused before any of its arguments is read. On a peer's, one this node
// does not know gets NOPERM bad cluster credentials: what a node that
// predates a subcommand answers, which its callers recognise.
func cmdPeer(s *Server, c *client, args [][]byte) {
	switch {
	case s.cl == nil && s.reg == nil:
		c.conn.WriteError(errNoCluster)
	case !c.Peer && cluster.IsWord(args[1], cluster.PeerHello):
		s.peerHello(c, args)
	case !c.Peer && cluster.IsWord(args[1], cluster.PeerAuth):
		s.peerAuth(c, args)
	case !c.Peer:
		c.conn.WriteError(errNotPeer)
	case s.reg != nil && cluster.IsWord(args[1], cluster.PeerRegion) && len(args) == 3:
		s.peerRegion(c, args[2]) // region.go
	case s.cl == nil:
		c.conn.WriteError(errPeerAuth)
	case s.cl.repl != nil && cluster.IsWord(args[1], cluster.PeerCopy) && len(args) == 3:
		s.cl.repl.PeerCopy(c.conn, &c.ship, args[2])
	case s.cl.repl != nil && cluster.IsWord(args[1], cluster.PeerDelta) && len(args) == 3:
		s.cl.repl.PeerDelta(c.conn, &c.ship, args[2])
	case s.cl.repl != nil && cluster.IsWord(args[1], cluster.PeerSync) && len(args) >= 3 && len(args) <= 5:
		s.cl.repl.PeerSync(c.conn, &c.ship, c.peerName, args[2:])
	case s.cl.repl != nil && cluster.IsWord(args[1], cluster.PeerSynced) && len(args) == 3:
		s.cl.repl.PeerSynced(c.conn, &c.ship)
	case s.cl.repl != nil && cluster.IsWord(args[1], cluster.PeerSeed) && len(args) == 6:
		s.cl.ho.PeerSeed(&c.Session, args) // server/internal/handoff, seed.go
	case s.cl.repl == nil && (cluster.IsWord(args[1], cluster.PeerCopy) || cluster.IsWord(args[1], cluster.PeerDelta) ||
		cluster.IsWord(args[1], cluster.PeerSync) || cluster.IsWord(args[1], cluster.PeerSeed)):
		c.conn.WriteError(cluster.PeerNoReplicas)
	case cluster.IsWord(args[1], cluster.PeerImport) && len(args) == 6:
		s.cl.ho.PeerImport(&c.Session, args)
	case cluster.IsWord(args[1], cluster.PeerDone) && len(args) == 4:
		s.cl.ho.PeerDone(&c.Session, args)
	case cluster.IsWord(args[1], cluster.PeerPull) && len(args) == 4:
		s.cl.ho.PeerPull(&c.Session, args)
	case cluster.IsWord(args[1], cluster.PeerReleased) && len(args) == 4:
		s.cl.ho.PeerReleased(&c.Session, args)
	default:
		c.conn.WriteError(errPeerAuth)
	}
}

// cmdHop runs a forwarded request as its hop level and protocol ask.
func cmdHop(s *Server, c *client, args [][]byte) {
	level, ok1 := parseInt(args[1])
	resp, ok2 := parseInt(args[2])
	switch {
	case !c.Peer:
		c.conn.WriteError(errNotPeer)
		return
	case !ok1 || !ok2 || level < hopForward || level > hopHandoff || (resp != 2 && resp != 3):
		c.conn.WriteError(errSyntax)
		return
	}
	s.cl.hops.Add(1)
	saved := c.Proto
	c.hop, c.Proto = int(level), int(resp)
	defer func() { c.hop, c.Proto = hopClient, saved }()
	s.pipe.Dispatch(&c.Session, args[3:])
}

// attachCluster sets up the cluster part of a new server, if configured.
func (s *Server) attachCluster() error {
	peers := peerCommands()
	s.register(peers)
	s.register(clusterCommands())
	if s.cfg.Cluster == nil {
		return nil
	}
	cn, err := newClusterNode(*s.cfg.Cluster)
	if err != nil {
		return err
	}
	cc := cn.cfg
	cn.ho, err = handoff.New(handoff.Config{View: cc.View, Forwarder: cc.Forwarder, Mover: cc.Mover, Joins: cc.Joins,
		Lease: cc.Lease, Replicas: cc.Replicas, Store: s.cfg.Store, Logger: s.log, Started: s.started, UnixNano: s.unixNano})
	if err != nil {
		return err
	}
	cn.repl = cn.ho.Replicator()
	s.cl = cn
	return nil
}

// mode is HELLO's mode and INFO's redis_mode, as Redis names them.
func (s *Server) mode() string {
	if s.cl == nil {
		return "standalone"
	}
	return "cluster"
}

// Hop levels beyond hopForward; see the constants in cluster.go.
const (
	// hopHandoff is a request sent between a moving slot's old and new
	// owners, or by a node to the owner its table names when a peer's
	// table differed. It is served where it lands, unless that node has
	// handed the slot over: then it answers errHandedOff, and the sender
	// runs it itself or answers TRYAGAIN. It is never sent on again.
	hopHandoff = 2
)

// Replies of the handoff. errHandedOff goes only between nodes.
const (
	errHandedOff = "HANDEDOFF this node has handed the slot over"
	errTryAgain  = "TRYAGAIN the key's slot is moving between nodes; retry"
)

// ClusterChanged makes the server take the membership's current view now,
// running the handoff for it; cmd/rlstore calls it from the membership's
// OnChange. Without it a change is taken by the next request that routes.
func (s *Server) ClusterChanged() {
	if s.cl != nil {
		s.cl.view()
	}
}

// HandOff hands every slot this node holds to the node that owns it
// without this one, for a graceful leave (handoff.Node.HandOff).
func (s *Server) HandOff(ctx context.Context) error {
	if s.cl == nil {
		return nil
	}
	return s.cl.ho.HandOff(ctx)
}

// The handoff's view and hooks, as the front's files still call them.
// They go when the router moves into a package of its own.

// tableHook is handoff.Hook.
type tableHook = handoff.Hook

// view is handoff.Node.View.
func (cn *clusterNode) view() *cluster.View { return cn.ho.View() }

// onTableChange is handoff.Node.OnTableChange.
func (cn *clusterNode) onTableChange(h tableHook) { cn.ho.OnTableChange(h) }

// QuietHops waits until no other node has sent this one a request for
// quiet, or max has passed. A leaving node calls it after telling the
// members, which then route to the new owners as soon as each has rebuilt
// its table: once their forwards stop arriving, draining this node's
// connections fails nobody's request.
func (s *Server) QuietHops(quiet, max time.Duration) {
	if s.cl != nil {
		quietOn(&s.cl.hops, quiet, max)
	}
}

// QuietClients waits until this node has forwarded nothing for quiet, or
// max has passed. A leaving node, which owns no slot, calls it after
// QuietHops: what it forwards then comes from its own clients, and
// cluster-aware ones stop sending once they have reloaded their slot map,
// which they do on a timer (see docs/clients.md); a node that went before
// would fail them with "connection refused".
func (s *Server) QuietClients(quiet, max time.Duration) {
	if s.cl != nil {
		quietOn(&s.cl.forwarded, quiet, max)
	}
}

// quietOn waits until n has not changed for quiet, or max has passed.
func quietOn(n *atomic.Int64, quiet, max time.Duration) {
	end := time.Now().Add(max)
	for last := n.Load(); time.Now().Before(end); {
		time.Sleep(min(quiet, time.Until(end)))
		m := n.Load()
		if m == last {
			return
		}
		last = m
	}
}
