package handoff

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// Config is what a Node needs of the server it runs in, set once at New
// (memberlist's Config and delegates are the model): the membership, the
// peers' transport, the lease, the store and the replicas.
type Config struct {
	View      func() *cluster.View // the current membership; required
	Forwarder cluster.Forwarder    // how RL.PEER reaches other nodes; required
	// Mover carries the handoff's copies of moving slots (RL.PEER IMPORT
	// and DONE) on connections of its own; nil uses Forwarder.
	Mover cluster.Forwarder
	// Joins says the node was started with seeds to join, or members it
	// remembers (see handoffHook).
	Joins bool
	// Known, if set, returns the names of the known member set, dead
	// members included: a new process records which slots' state the
	// dead ones may hold (see seedDeadPrev).
	Known func() []string
	// Lease, if set, is this node's serving lease (see lease.go). Nil serves always.
	Lease *cluster.Lease
	// Replicas, if set, ships this node's changes to each slot's backup
	// and keeps the copies shipped to it.
	Replicas *replica.Config
	Store    *shard.Map // the store this node serves; required
	Logger   *slog.Logger
	// Started is the server's monotonic origin: a command's Session.Mark
	// is the time since it.
	Started time.Time
	// UnixNano is the server's clock, in unix nanoseconds.
	UnixNano func() int64
}

// Node is a cluster node's handoff: the view routing uses and the hooks
// that run when it changes, each moving slot's state, the migrations and
// imports, the lease's checks, and the replicator. The router (package
// route) asks it where a slot stands and whether this node may serve it.
type Node struct {
	cfg     Config
	log     *slog.Logger
	store   *shard.Map
	started time.Time
	repl    *replica.Replicator // nil without replicas

	cur      atomic.Pointer[cluster.View] // the view routing uses; see View
	switchMu sync.Mutex                   // held while the table-change hooks run; guards hooks
	hooks    []Hook
	ho       handoff
	moves    sync.WaitGroup // migrations under way, for HandOff

	lease    *cluster.Lease                   // nil: serve always (see lease.go)
	leaseOff int64                            // the lease's clock minus the server's monotonic one
	takeover atomic.Pointer[cluster.Takeover] // slots gained from dead members, and when they may be served
	downs    atomic.Int64                     // keyed commands answered as down: no lease, or a takeover's wait
	down     downs                            // down replies by reason (downs.go)
	rejoins  atomic.Int64                     // times this node learned it had been declared dead while it could not serve
	pushing  atomic.Bool                      // a pushKept runs (kept.go)
}

// New returns the handoff of a cluster node. Its own hook is the first
// table-change hook, the replicas' (if any) the second; it takes the
// membership's view before it returns.
func New(cfg Config) (*Node, error) {
	n := &Node{cfg: cfg, log: cfg.Logger, store: cfg.Store, started: cfg.Started}
	n.ho.waits.origin = time.Now()
	if n.lease = cfg.Lease; n.lease != nil {
		n.leaseOff = int64(cfg.Started.Sub(n.lease.Origin()))
		n.lease.OnDeclaredDead(n.rejoin)
		n.lease.OnUnconfirmed(n.rejoinUnconfirmed)
	}
	n.OnTableChange(n.handoffHook) // hooks are added here, before the first view is taken
	if rc := cfg.Replicas; rc != nil {
		rcfg := *rc
		if n.lease != nil && rcfg.MaxLag == 0 {
			rcfg.MaxLag = backupLagTerms * n.lease.Term() // see replica.Fresh
		}
		var err error
		if n.repl, err = replica.New(rcfg, cfg.View().Self, cfg.Store, n.log, n); err != nil {
			return nil, err
		}
		n.OnTableChange(n.repl.OnTable) // promotes copies before a dead owner's slots are served
	}
	n.View()
	return n, nil
}

// Hook is called on every change of the membership view, with the view
// routing used until now and the one it is about to use, before any request
// is routed by the new one. Hooks run one at a time, in the order they were
// added, on whichever goroutine first sees the change (the membership's, or
// a connection's); they must be quick, start any long work on their own
// goroutines, and must not call View (they hold its switch).
type Hook func(old, new *cluster.View)

// OnTableChange adds h to the hooks run on every table change. Call it
// while the server is being set up, before it serves.
func (n *Node) OnTableChange(h Hook) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	n.hooks = append(n.hooks, h)
}

// Hooks returns the table-change hooks, in the order they run.
func (n *Node) Hooks() []Hook {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	return append([]Hook(nil), n.hooks...)
}

// View returns the view routing uses now. When the membership has a newer
// one, the table-change hooks run first, so that no request is routed by a
// table whose handoff state is not yet set up.
func (n *Node) View() *cluster.View {
	v := n.cfg.View()
	if cur := n.cur.Load(); cur == v {
		return cur
	}
	return n.SwitchTo(v)
}

// Current is the view routing uses, without taking the membership's newer
// one (View does).
func (n *Node) Current() *cluster.View { return n.cur.Load() }

// SwitchTo runs the hooks for v and makes it the routing view. View calls
// it with the membership's; a test may with a view of its own.
func (n *Node) SwitchTo(v *cluster.View) *cluster.View {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	old := n.cur.Load()
	if old == v {
		return v
	}
	if old != nil && v.Table.Epoch() < old.Table.Epoch() {
		return old // a connection that read the membership before a newer switch
	}
	if n.repl != nil {
		defer n.repl.HoldDrops()() // between noteLost and promote, no copy goes: see HoldDrops
	}
	for _, h := range n.hooks {
		h(old, v)
	}
	n.cur.Store(v)
	return v
}

// Replicator is the node's replicator; nil without replicas.
func (n *Node) Replicator() *replica.Replicator { return n.repl }

// Lease is the node's serving lease; nil serves always.
func (n *Node) Lease() *cluster.Lease { return n.lease }

// Takeover is the slots gained from dead members, and when they may be served.
func (n *Node) Takeover() *cluster.Takeover { return n.takeover.Load() }

// UnixNano is the server's clock (replica.Delegate).
func (n *Node) UnixNano() int64 { return n.cfg.UnixNano() }

// Mono is the lease's clock, which MayServe compares Fresh's deadlines
// with (replica.Delegate).
func (n *Node) Mono() int64 {
	if l := n.lease; l != nil {
		return l.Now()
	}
	return int64(time.Since(n.started))
}

// Lost reports whether this node has slot lost (replica.Delegate): see
// lost.go.
func (n *Node) Lost(slot int) (string, bool) {
	if !n.takeover.Load().Lost(slot) {
		return "", false
	}
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	return n.ho.holder[slot], true
}

// Handing reports whether this node hands slot over and has sent no DONE
// for it (replica.Delegate): a migration's copy phase, the migration not
// disowned by a rejoin. It is read in the table-change hooks, before the
// migration settles a slot the table gives back (see settle).
func (n *Node) Handing(slot int) bool {
	st := n.ho.state(slot)
	return st != nil && st.mg != nil && st.Mode() == ModeCopying && !st.mg.disowned.Load()
}

// Importing reports whether this node imports any slot (replica.Delegate).
func (n *Node) Importing() bool {
	in, _ := n.ho.moving()
	return in > 0
}

// StartReplicas starts shipping, if replicas are on, and returns the stop
// of every background task: shipping first, then stop's.
func (n *Node) StartReplicas(stop func()) func() {
	if n.repl == nil {
		return stop
	}
	r := n.repl
	r.Start()
	return func() {
		r.Close()
		stop()
	}
}

// State returns slot's handoff state, nil when it follows the table.
func (n *Node) State(slot int) *SlotState { return n.ho.state(slot) }

// Moving counts the slots being imported and being migrated out now.
func (n *Node) Moving() (importing, migrating int) { return n.ho.moving() }

// WaitChange waits at most d for slot's state to be other than st.
func (n *Node) WaitChange(slot int, st *SlotState, d time.Duration) { n.ho.waitChange(slot, st, d) }

// Enter registers a local run of a keyed command by connection id, which
// a cut waits for (see barrier), and returns its ticket for Leave.
func (n *Node) Enter(id int64) uint32 { return n.ho.running.enter(id) }

// Leave ends a run that Enter registered.
func (n *Node) Leave(id int64, ticket uint32) { n.ho.running.leave(id, ticket) }

// MayServe reports whether this node may serve slot for x's command now.
func (n *Node) MayServe(x *core.Session, slot int) bool { return n.mayServe(x, slot) }

// Serving reports whether this node holds its lease now: CLUSTER INFO's
// cluster_state, and replica.Delegate's (a full sync waits for it).
func (n *Node) Serving() bool { return n.serving() }

// Down counts a keyed command of x's for slot answered as down, by why
// this node may not serve it.
func (n *Node) Down(x *core.Session, slot int) {
	n.downs.Add(1)
	n.noteDown(n.downReason(x, slot), slot)
}

// Waiting counts a keyed command for slot answered as down because the
// view waits for this node's join.
func (n *Node) Waiting(slot int) { n.noteDown(downWaiting, slot) }

// CrossedCut counts a request sent back to the old owner that reached it
// after its cut.
func (n *Node) CrossedCut() { n.ho.stats.crossedCut.Add(1) }

// ForgetLost serves the lost slots from what this node has: an operator
// said a member will not come back (RL.CLUSTER FORGET).
func (n *Node) ForgetLost() { n.forgetLost() }

// QuorumPairs are RL.CLUSTER INFO's fields about the lease.
func (n *Node) QuorumPairs() []core.Pair { return n.quorumPairs() }

// HandoffPairs are the handoff's counters for RL.CLUSTER INFO and INFO cluster.
func (n *Node) HandoffPairs() []core.Pair { return n.handoffPairs() }

// The node-to-node requests the handoff answers; each replies through
// x.Out. The router checks that x is a peer's connection first.

// PeerImport is RL.PEER IMPORT (see peerImport).
func (n *Node) PeerImport(x *core.Session, args [][]byte) { n.peerImport(x, args) }

// PeerDone is RL.PEER DONE (see peerDone).
func (n *Node) PeerDone(x *core.Session, args [][]byte) { n.peerDone(x, args) }

// PeerPull is RL.PEER PULL (see peerPull).
func (n *Node) PeerPull(x *core.Session, args [][]byte) { n.peerPull(x, args) }

// PeerReleased is RL.PEER RELEASED (see peerReleased).
func (n *Node) PeerReleased(x *core.Session, args [][]byte) { n.peerReleased(x, args) }

// PeerServes is RL.PEER SERVES (see peerServes).
func (n *Node) PeerServes(x *core.Session, args [][]byte) { n.peerServes(x, args) }

// PeerSeed is RL.PEER SEED (see peerSeed); only with replicas.
func (n *Node) PeerSeed(x *core.Session, args [][]byte) { n.peerSeed(x, args) }

// Peer is the other node of a moving slot: the old owner when importing,
// the new owner when migrating.
func (st *SlotState) Peer() cluster.Node { return st.peer }

// Gate is the migration of a slot moving out, whose gate a request waits
// for; nil unless migrating.
func (st *SlotState) Gate() *Migration { return st.mg }

// WaitOpen waits at most d for the migration's gate to open, and reports
// whether it did.
func (mg *Migration) WaitOpen(d time.Duration) bool { return mg.waitOpen(d) }

// Replies of the handoff's node-to-node requests.
const (
	errSyntax   = "ERR syntax error"
	errPeerAuth = cluster.PeerRefused
)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
