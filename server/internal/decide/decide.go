package decide

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/rlstore/rlstore/shard"
)

// Front is what the decision commands ask of the server they run in,
// handed to New once (memberlist's Config and delegates): the command's
// time, the clients that track a key, the regions' global keys and the
// policies. Its methods are called on the connection's goroutine.
type Front interface {
	// Now returns the time, in unix nanoseconds, of the command x is running.
	Now(x *core.Session) int64
	// Changed tells the clients that track key that x's command changed
	// it (x is nil for a request no local client made); it costs one
	// atomic load while nobody tracks.
	Changed(x *core.Session, key []byte)
	// RefusedGlobal replies and reports true if key is a region's global
	// key, which the command cmd does not take.
	RefusedGlobal(x *core.Session, key []byte, cmd string) bool
	// RefusedGlobalPolicy replies and reports true if the policy called
	// name may not reserve on key, a region's global key.
	RefusedGlobalPolicy(x *core.Session, key, name []byte) bool
	// Policy returns the policy called name, or nil.
	Policy(name []byte) *policy.Policy
	// Owner names this node, the one that answers for its keys, in a
	// cluster; "" outside one.
	Owner() string
}

// Decisions runs the decision commands on the store, and keeps their
// shared counters. Make it with New; it is safe for concurrent use, each
// connection's part being its own Conn.
type Decisions struct {
	store   *shard.Map
	table   *core.Table // for the commands a batch's requests name (Prefetch)
	front   Front
	clock   *Clock        // the commands' time
	pols    *Policies     // RL.CHECK's policies
	regions Regions       // the global keys' decider, or nil (DecideGlobals)
	watch   *atomic.Int32 // while 0, nobody watches: a decision does not call Front.Changed (Watch)
	slot    core.Slot[Conn]

	// Counts are the decisions counted so far, by slot (SlotThrottle …);
	// a connection's own counts join them when it flushes its Tally.
	Counts Counts
}

// New returns the decision commands on store, deciding at clock's time
// with the policies pols and asking front what else they need of the
// server, with each session's Conn in a slot of slots; table is the
// command table the batches' requests are looked up in.
func New(store *shard.Map, table *core.Table, clock *Clock, pols *Policies, front Front, slots *core.Slots) *Decisions {
	d := &Decisions{store: store, table: table, clock: clock, pols: pols, front: front, slot: core.NewSlot[Conn](slots)}
	d.watch = new(atomic.Int32)
	d.watch.Store(1) // until Watch says otherwise, every change is told
	return d
}

// Watch makes the seam tell Front.Changed of a decision's change only
// while n, the number of clients tracking or monitoring, is not 0: with
// nobody watching, a decision then pays one atomic load for it, as the
// pipeline's hooks do, rather than a call. The server calls it once,
// before it serves.
func (d *Decisions) Watch(n *atomic.Int32) { d.watch = n }

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
