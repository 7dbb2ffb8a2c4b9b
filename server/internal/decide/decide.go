package decide

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/rlstore/rlstore/shard"
)

// Front is what the decision commands ask of the server they run in,
// handed to New once (memberlist's Config and delegates): the regions'
// refusal of a global key, and the node's name. Its methods are called on
// the connection's goroutine.
type Front interface {
	// RefusedGlobal replies and reports true if key is a region's global
	// key, which the command cmd does not take.
	RefusedGlobal(x *core.Session, key []byte, cmd string) bool
	// RefusedGlobalPolicy replies and reports true if the policy called
	// name may not reserve on key, a region's global key.
	RefusedGlobalPolicy(x *core.Session, key, name []byte) bool
	// Owner names this node, the one that answers for its keys, in a
	// cluster; "" outside one.
	Owner() string
}

// Tracker is told of the keys the decision commands change, for the
// clients that track them (CLIENT TRACKING, MONITOR: observe.Observers is
// one).
type Tracker interface {
	// Changed tells the clients that track key that x's command changed
	// it (x is nil for a request no local client made); it costs one
	// atomic load while nobody tracks.
	Changed(x *core.Session, key []byte)
	// Watchers is the count of clients tracking or monitoring, which the
	// seam reads before it calls Changed: with nobody watching, a
	// decision pays one atomic load for it, as the pipeline's hooks do,
	// rather than a call.
	Watchers() *atomic.Int32
}

// Config is what New needs: the store, the command table the batches'
// requests are looked up in, the commands' clock, the policies, and the
// server's Front and Tracker, with each session's Conn in a slot of Slots.
type Config struct {
	Store    *shard.Map
	Table    *core.Table
	Clock    *Clock
	Policies *Policies
	Front    Front
	Tracker  Tracker
	Slots    *core.Slots
}

// Decisions runs the decision commands on the store, and keeps their
// shared counters. Make it with New; it is safe for concurrent use, each
// connection's part being its own Conn.
type Decisions struct {
	store   *shard.Map
	table   *core.Table // for the commands a batch's requests name (Prefetch)
	front   asks
	clock   *Clock        // the commands' time
	pols    *Policies     // RL.CHECK's policies
	regions Regions       // the global keys' decider, or nil (DecideGlobals)
	watch   *atomic.Int32 // while 0, nobody watches: a decision does not call Tracker.Changed
	slot    core.Slot[Conn]

	// Counts are the decisions counted so far, by slot (SlotThrottle …);
	// a connection's own counts join them when it flushes its Tally.
	Counts Counts
}

// asks is what the commands ask beyond the store, in one place: the
// server's Front, the Tracker, and what decide answers itself (a
// command's time from the Clock, a policy by name from the Policies).
type asks struct {
	Front
	tracker Tracker
	clock   *Clock
	pols    *Policies
}

// Now returns the time, in unix nanoseconds, of the command x is running.
func (a asks) Now(x *core.Session) int64 { return a.clock.At(x, x.Mark) }

// Policy returns the policy called name, or nil.
func (a asks) Policy(name []byte) *policy.Policy { return a.pols.Get(name) }

// Changed tells the Tracker that x's command changed key.
func (a asks) Changed(x *core.Session, key []byte) { a.tracker.Changed(x, key) }

// New returns the decision commands of cfg.
func New(cfg Config) *Decisions {
	d := &Decisions{store: cfg.Store, table: cfg.Table, clock: cfg.Clock, pols: cfg.Policies,
		front: asks{Front: cfg.Front, tracker: cfg.Tracker, clock: cfg.Clock, pols: cfg.Policies},
		watch: cfg.Tracker.Watchers(), slot: core.NewSlot[Conn](cfg.Slots)}
	return d
}

// Conn is one connection's decision state. The server holds it by value,
// so that its hot path reaches it without a slot lookup; the commands
// find it in the session's slot (Open).
type Conn struct {
	Tally  Tally      // decisions counted, not yet in Decisions.Counts
	Params ParamCache // the last native decision's parameters
	batch  batchKeys  // the batch's keys and their hashes (Prefetch)
	rc     *resp.Conn // the connection, whose request being run KeyHash checks
}

// Open makes c the decision state of the session x, which reads its
// requests from rc.
func (d *Decisions) Open(x *core.Session, c *Conn, rc *resp.Conn) {
	c.rc = rc
	d.slot.Set(x, c)
}

// count counts a lease's or reservation's outcome in slot (none for -1, a
// refund): with x's own counts, or the shared ones for a session with no Conn.
func (d *Decisions) count(x *core.Session, slot int, allowed bool) {
	if slot < 0 {
		return
	}
	if c := d.slot.Get(x); c != nil {
		c.Tally.Count(slot, allowed)
		return
	}
	d.Counts[slot].Count(allowed)
}
