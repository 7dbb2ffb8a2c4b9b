package server

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
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
	// only after its TakeoverWait (see quorum.go). Nil serves always.
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
// (handoff_seed.go) and the handoff's IMPORT, DONE and PULL
// (handoff_peer.go), and RELEASED (handoff_release.go). On a client's connection every other subcommand is
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
		s.peerSeed(c, args) // handoff_seed.go
	case s.cl.repl == nil && (cluster.IsWord(args[1], cluster.PeerCopy) || cluster.IsWord(args[1], cluster.PeerDelta) ||
		cluster.IsWord(args[1], cluster.PeerSync) || cluster.IsWord(args[1], cluster.PeerSeed)):
		c.conn.WriteError(cluster.PeerNoReplicas)
	case cluster.IsWord(args[1], cluster.PeerImport) && len(args) == 6:
		s.peerImport(c, args)
	case cluster.IsWord(args[1], cluster.PeerDone) && len(args) == 4:
		s.peerDone(c, args)
	case cluster.IsWord(args[1], cluster.PeerPull) && len(args) == 4:
		s.peerPull(c, args)
	case cluster.IsWord(args[1], cluster.PeerReleased) && len(args) == 4:
		s.peerReleased(c, args)
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
	s.cl = cn
	if cn.lease = cn.cfg.Lease; cn.lease != nil {
		cn.leaseOff = int64(s.started.Sub(cn.lease.Origin()))
		cn.lease.OnDeclaredDead(s.rejoin)
	}
	cn.onTableChange(s.handoffHook) // hooks are added here, before the first view is taken
	if rc := s.cfg.Cluster.Replicas; rc != nil {
		rcfg := *rc
		if cn.lease != nil && rcfg.MaxLag == 0 {
			rcfg.MaxLag = backupLagTerms * cn.lease.Term() // see replica.Fresh
		}
		if cn.repl, err = replica.New(rcfg, cn.cfg.View().Self, s.cfg.Store, s.log, replicaDelegate{s}); err != nil {
			return err
		}
		cn.onTableChange(cn.repl.OnTable) // promotes copies before a dead owner's slots are served
	}
	cn.view()
	return nil
}

// mode is HELLO's mode and INFO's redis_mode, as Redis names them.
func (s *Server) mode() string {
	if s.cl == nil {
		return "standalone"
	}
	return "cluster"
}
