package route

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
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
	Replicas *replica.Config
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
	// Known returns the names of the known member set (cluster.Known),
	// dead members included; nil for none (see handoff.Config.Known).
	Known func() []string
	// KnownSet returns the known member set's entries, tombstones
	// included (cluster.Known.All): CLUSTER NODES lists its dead members
	// and derives the config epochs from it. Nil: the view's members.
	KnownSet func() []cluster.KnownMember
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
	UnreachableLocal                        // decide at the slot's substitute, one node per partition side (see substitute.go)
	UnreachableAllow                        // admit without deciding (fail open, no bound)
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

// Router is a cluster node's router: where each keyed command runs, the
// forwards to the other nodes and their replies, the node-to-node
// commands' entry (RL.PEER, RL.HOP), the cluster commands clients route
// by, and the policies' versions across the nodes. Without a cluster it
// answers the cluster commands with Redis's error and serves the regions'
// handshake.
type Router struct {
	cfg      ClusterConfig // the zero value without a cluster
	on       bool          // a node of a cluster
	ho       *handoff.Node
	repl     *replica.Replicator // nil without --replicas: ho.Replicator(), kept here for the peers' commands
	pipe     *core.Pipeline
	table    *core.Table
	store    *shard.Map
	log      *slog.Logger
	clock    func() time.Time
	unixNano func() int64
	run      Runner
	conns    Conns
	gate     Gate
	live     Keys
	regions  Regions
	apply    Policies
	slot     core.Slot[Conn]

	keys      [][]byte     // the peer keys a handshake may prove: Secret's, then OldSecrets'
	forwarded atomic.Int64 // commands sent to their owners
	unreached atomic.Int64 // commands answered by --owner-unreachable
	hops      atomic.Int64 // requests other nodes sent here (RL.HOP), for QuietHops
	pols      policyVersions
	peers     sync.Map                 // node name → *peerStats, for /metrics; as many as nodes ever forwarded to
	batches   sync.Pool                // *remoteBatch, for forwardLater
	topo      atomic.Pointer[topology] // CLUSTER SLOTS', SHARDS' and NODES' replies for the latest view asked about
	hosts     hostNudges               // the client hosts nudged at the latest table, for the libraries nudged per host
}

// New returns the router of cfg. With a cluster it checks the cluster's
// options, takes their defaults, and makes the node's handoff (package
// handoff), which makes the replicator: the cluster stack, bottom up.
func New(cfg Config) (*Router, error) {
	rt := &Router{pipe: cfg.Pipeline, table: cfg.Table, store: cfg.Store, log: cfg.Logger,
		clock: cfg.Clock, unixNano: cfg.UnixNano, run: cfg.Runner, conns: cfg.Conns, gate: cfg.Gate,
		live: cfg.Keys, regions: cfg.Regions, apply: cfg.Policies, slot: core.NewSlot[Conn](cfg.Slots)}
	if cfg.Cluster == nil {
		return rt, nil
	}
	rt.cfg, rt.on = *cfg.Cluster, true
	if err := rt.cfg.withDefaults(); err != nil {
		return nil, err
	}
	rt.keys = [][]byte{cluster.PeerKey(rt.cfg.Secret)}
	for _, old := range rt.cfg.OldSecrets {
		rt.keys = append(rt.keys, cluster.PeerKey(old))
	}
	cc := rt.cfg
	ho, err := handoff.New(handoff.Config{View: cc.View, Forwarder: cc.Forwarder, Mover: cc.Mover, Joins: cc.Joins, Known: cc.Known,
		Lease: cc.Lease, Replicas: cc.Replicas, Store: cfg.Store, Logger: cfg.Logger, Started: cfg.Started, UnixNano: cfg.UnixNano})
	if err != nil {
		return nil, err
	}
	rt.ho, rt.repl = ho, ho.Replicator()
	return rt, nil
}

// Open makes c x's router state, for the connection's life.
func (rt *Router) Open(x *core.Session, c *Conn) { rt.slot.Set(x, c) }

// Conn is the router's state of one connection: the hop level of the
// forwarded request it runs, its requests for other nodes, whether it
// routes by slot, and, on a peer's connection, the handshake and the
// replicas' stream. Only the connection's goroutine touches it, and only
// the router reaches its fields.
type Conn struct {
	hop      int                // the hop level of the forwarded request being run (hopClient if none)
	shake    *cluster.Challenge // the handshake's RL.PEER HELLO, once it came (peerauth.go)
	peerName string             // the node that proved itself with RL.PEER AUTH
	ship     replica.Stream     // a primary's shipments on this connection (replica.Replicator.PeerCopy)
	fwd      []*remoteBatch     // this batch's requests for other nodes, one batch per owner, sent when it ends
	routing  routing            // whether it routes by slot, and the table it last saw (nudge.go)
}

// Clustered reports whether the router is a cluster node's.
func (rt *Router) Clustered() bool { return rt.on }

// Handoff is the node's handoff; nil without a cluster.
func (rt *Router) Handoff() *handoff.Node { return rt.ho }

// hop levels: how a request reached this node. Append only: peers of
// another version read them.
const (
	hopClient  = 0 // from a client: route it
	hopForward = 1 // forwarded once: serve it here, whoever owns it now
	// hopHandoff is a request sent between a moving slot's old and new
	// owners, or by a node to the owner its table names when a peer's
	// table differed. It is served where it lands, unless that node has
	// handed the slot over: then it answers errHandedOff, and the sender
	// runs it itself or answers TRYAGAIN. It is never sent on again.
	hopHandoff = 2
	// hopSubstitute is a request sent, under --owner-unreachable local, to
	// the node its sender picked to decide the slot's keys for their side
	// of a partition (substitute.go): it is decided where it lands, whether
	// or not that node may serve the slot. A node of a build before it
	// answers a syntax error, which the sender passes on.
	hopSubstitute = 3
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
	// Replies of the handoff. errHandedOff goes only between nodes.
	errHandedOff = "HANDEDOFF this node has handed the slot over"
	errTryAgain  = "TRYAGAIN the key's slot is moving between nodes; retry"
	errSyntax    = string(policy.ErrSyntax)
	errNotInt    = string(policy.ErrNotInt)
)

// The replies of the cluster's refusals, for the front's tests of every command.
const (
	ErrNoCluster = errNoCluster
	ErrNotPeer   = errNotPeer
	ErrPeerAuth  = errPeerAuth
	ErrHandedOff = errHandedOff
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

// Commands are the node-to-node commands, then the cluster commands
// clients route by (cmds.go).
func (rt *Router) Commands() []core.Command {
	return append([]core.Command{
		{Name: "rl.peer", Arity: -3, Flags: core.FlagNoAuth | core.FlagNoQueue | core.FlagNoTx, Run: rt.cmdPeer, Secret: core.HideArgs, Group: "cluster",
			Summary: "Node-to-node handshake: HELLO name, then AUTH name mac"},
		{Name: "rl.hop", Arity: -4, Flags: core.FlagNoQueue, Run: rt.cmdHop, Wraps: 3, Secret: core.HideArgs, Group: "cluster",
			Summary: "A request forwarded by another node: RL.HOP level resp command [arg ...]"},
	}, rt.clusterCommands()...)
}

// cmdPeer is the handshake, RL.PEER HELLO and AUTH (peerauth.go), and,
// on a peer's connection only, the replicas' COPY, DELTA and SYNC
// (server/internal/replica, copies.go), an old owner's SEED
// and the handoff's IMPORT, DONE, PULL, RELEASED and SERVES (package
// handoff: seed.go, peer.go, restore.go, release.go, stable.go), and the
// regions' REGION. On a
// client's connection every other subcommand is refused before any of its
// arguments is read. On a peer's, one this node does not know gets NOPERM
// bad cluster credentials: what a node that predates a subcommand answers,
// which its callers recognise.
func (rt *Router) cmdPeer(x *core.Session, args [][]byte) {
	c := rt.slot.Get(x)
	switch {
	case !rt.on && !rt.regions.Regional():
		x.Out.WriteError(errNoCluster)
	case !x.Peer && cluster.IsWord(args[1], cluster.PeerHello):
		rt.peerHello(x, c, args)
	case !x.Peer && cluster.IsWord(args[1], cluster.PeerAuth):
		rt.peerAuth(x, c, args)
	case !x.Peer:
		x.Out.WriteError(errNotPeer)
	case rt.regions.Regional() && cluster.IsWord(args[1], cluster.PeerRegion) && len(args) == 3:
		rt.regions.PeerRegion(x, args[2])
	case !rt.on:
		x.Out.WriteError(errPeerAuth)
	case rt.repl != nil && cluster.IsWord(args[1], cluster.PeerCopy) && len(args) == 3:
		rt.repl.PeerCopy(x.Out, &c.ship, args[2])
	case rt.repl != nil && cluster.IsWord(args[1], cluster.PeerDelta) && len(args) == 3:
		rt.repl.PeerDelta(x.Out, &c.ship, args[2])
	case rt.repl != nil && cluster.IsWord(args[1], cluster.PeerSync) && (len(args) >= 3 && len(args) <= 5 || len(args) >= 8 && len(args)%2 == 0):
		rt.repl.PeerSync(x.Out, &c.ship, c.peerName, args[2:])
	case rt.repl != nil && cluster.IsWord(args[1], cluster.PeerSynced) && len(args) == 3:
		rt.repl.PeerSynced(x.Out, &c.ship)
	case rt.repl != nil && cluster.IsWord(args[1], cluster.PeerSeed) && len(args) == 6:
		rt.ho.PeerSeed(x, args) // server/internal/handoff, seed.go
	case rt.repl == nil && (cluster.IsWord(args[1], cluster.PeerCopy) || cluster.IsWord(args[1], cluster.PeerDelta) ||
		cluster.IsWord(args[1], cluster.PeerSync) || cluster.IsWord(args[1], cluster.PeerSeed)):
		x.Out.WriteError(cluster.PeerNoReplicas)
	case cluster.IsWord(args[1], cluster.PeerImport) && len(args) == 6:
		rt.ho.PeerImport(x, args)
	case cluster.IsWord(args[1], cluster.PeerDone) && len(args) == 4:
		rt.ho.PeerDone(x, args)
	case cluster.IsWord(args[1], cluster.PeerPull) && len(args) == 4:
		rt.ho.PeerPull(x, args)
	case cluster.IsWord(args[1], cluster.PeerReleased) && len(args) >= 4 && releasedForm(args[4:]):
		rt.ho.PeerReleased(x, args)
	case cluster.IsWord(args[1], cluster.PeerServes) && len(args) == 4:
		rt.ho.PeerServes(x, args) // server/internal/handoff, stable.go
	default:
		x.Out.WriteError(errPeerAuth)
	}
}

// releasedForm reports whether rest, RL.PEER RELEASED's arguments after
// its slots, is a form this node knows: KEEP, HANDED and its slots,
// RESTORED and its processes (numbers both), then PAST and the nodes it
// names, each optional.
func releasedForm(rest [][]byte) bool {
	if len(rest) > 0 && cluster.IsWord(rest[0], cluster.ReleasedKeep) {
		rest = rest[1:]
	}
	for _, w := range []string{cluster.ReleasedHanded, cluster.ReleasedRestored} {
		if len(rest) > 1 && cluster.IsWord(rest[0], w) && len(rest[1]) > 0 && rest[1][0] >= '0' && rest[1][0] <= '9' {
			rest = rest[2:]
		}
	}
	return len(rest) == 0 || cluster.IsWord(rest[0], cluster.ReleasedPast)
}

// cmdHop runs a forwarded request as its hop level and protocol ask.
func (rt *Router) cmdHop(x *core.Session, args [][]byte) {
	level, ok1 := policy.ParseInt(args[1])
	resp, ok2 := policy.ParseInt(args[2])
	switch {
	case !x.Peer:
		x.Out.WriteError(errNotPeer)
		return
	case !ok1 || !ok2 || level < hopForward || level > hopSubstitute || (resp != 2 && resp != 3):
		x.Out.WriteError(errSyntax)
		return
	}
	rt.hops.Add(1)
	c := rt.slot.Get(x)
	saved := x.Proto
	c.hop, x.Proto = int(level), int(resp)
	defer func() { c.hop, x.Proto = hopClient, saved }()
	rt.pipe.Dispatch(x, args[3:])
}

// QuietHops waits until no other node has sent this one a request for
// quiet, or max has passed. A leaving node calls it after telling the
// members, which then route to the new owners as soon as each has rebuilt
// its table: once their forwards stop arriving, draining this node's
// connections fails nobody's request.
func (rt *Router) QuietHops(quiet, max time.Duration) { quietOn(&rt.hops, quiet, max) }

// QuietClients waits until this node has forwarded nothing for quiet, or
// max has passed. A leaving node, which owns no slot, calls it after
// QuietHops: what it forwards then comes from its own clients, and
// cluster-aware ones stop sending once they have reloaded their slot map,
// which they do on a timer (see docs/clients.md); a node that went before
// would fail them with "connection refused".
func (rt *Router) QuietClients(quiet, max time.Duration) { quietOn(&rt.forwarded, quiet, max) }

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
