package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
)

// This file holds the table-change hook and the per-slot handoff state the
// router consults; handoff_move.go moves the slots' keys. The model is
// Redis Cluster's MIGRATING/IMPORTING: a slot's old owner serves it until
// it has handed the slot's keys over, its new owner sends the slot's
// requests back to the old owner until then. See docs/cluster.md.

// tableHook is called on every change of the membership view, with the view
// routing used until now and the one it is about to use, before any request
// is routed by the new one. Hooks run one at a time, in the order they were
// added, on whichever goroutine first sees the change (the membership's, or
// a connection's); they must be quick, start any long work on their own
// goroutines, and must not call clusterNode.view (they hold its switch).
type tableHook func(old, new *cluster.View)

// onTableChange adds h to the hooks run on every table change. Call it
// while the server is being set up (attachCluster), before it serves.
func (cn *clusterNode) onTableChange(h tableHook) {
	cn.switchMu.Lock()
	defer cn.switchMu.Unlock()
	cn.hooks = append(cn.hooks, h)
}

// view returns the view routing uses now. When the membership has a newer
// one, the table-change hooks run first, so that no request is routed by a
// table whose handoff state is not yet set up.
func (cn *clusterNode) view() *cluster.View {
	v := cn.cfg.View()
	if cur := cn.cur.Load(); cur == v {
		return cur
	}
	return cn.switchTo(v)
}

// switchTo runs the hooks for v and makes it the routing view.
func (cn *clusterNode) switchTo(v *cluster.View) *cluster.View {
	cn.switchMu.Lock()
	defer cn.switchMu.Unlock()
	old := cn.cur.Load()
	if old == v {
		return v
	}
	if old != nil && v.Table.Epoch() < old.Table.Epoch() {
		return old // a connection that read the membership before a newer switch
	}
	for _, h := range cn.hooks {
		h(old, v)
	}
	cn.cur.Store(v)
	return v
}

// ClusterChanged makes the server take the membership's current view now,
// running the handoff for it; cmd/rlstore calls it from the membership's
// OnChange. Without it a change is taken by the next request that routes.
func (s *Server) ClusterChanged() {
	if s.cl != nil {
		s.cl.view()
	}
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

// slotMode is what this node is doing with a slot that is moving.
type slotMode int32

const (
	modeImporting slotMode = iota + 1 // new owner: the old owner serves the slot until it says done
	modeCopying                       // old owner: serves the slot while its keys are copied out
	modeGated                         // old owner: the last copy is being made; requests wait
	modeMoved                         // old owner: handed over; requests go to the new owner
	modeAdopted                       // handed to this node before its table names it the owner: serve here
)

func (m slotMode) String() string {
	return [...]string{"", "importing", "migrating", "gated", "moved", "adopted"}[m]
}

// slotState is one moving slot's state. It is immutable but for mg's
// phase, which all the slots of one migration share.
type slotState struct {
	mode  slotMode     // modeImporting, modeAdopted, or modeCopying for a migration (then see mg)
	peer  cluster.Node // the old owner when importing; the new owner when migrating
	mg    *migration   // the batch of slots moving out with this one; nil unless migrating
	until time.Time    // importing: when this node stops waiting and serves from what it has
	// keep marks an import of a slot this node owned all along, after it
	// learned it had been declared dead (see rejoin): a handback adds the
	// keys it lacks, and replaces its keys only in mode replace.
	keep bool
	// guess marks a joiner's import from the owner the slot has without it
	// (importFrom): its guess of the slot's backup, by a first view that
	// may lack members. A later view re-points it (see slotChange).
	guess bool
	// asks counts the old owners' ASKs that re-pointed this import (see
	// askElsewhere): a chain of them longer than the table has members
	// goes round in a circle, and is not followed further.
	asks int
}

// now returns the slot's mode at this moment.
func (st *slotState) now() slotMode {
	if st.mg != nil {
		return slotMode(st.mg.phase.Load())
	}
	return st.mode
}

// handoff is a node's per-slot handoff state and its counters.
type handoff struct {
	slots   [cluster.Slots]atomic.Pointer[slotState] // nil: the slot follows the table; written by set and swap only
	active  atomic.Int32                             // at least the slots whose state is not nil: see state
	running barrier                                  // local runs of keyed commands, which a cut waits for
	stats   handoffStats
	leaving atomic.Bool // HandOff has begun: this node's slots go to their runner-ups

	inMu sync.Mutex        // guards in
	in   map[string][2]int // keys and bytes of the copy under way from each node

	changeMu sync.Mutex    // guards changed
	changed  chan struct{} // closed by notify when slots' states change; nil when nobody waits
	// Guarded by clusterNode.switchMu, since only the hook touches them:
	counts bool // the routing table shows what this node served (see handoffHook)
	shared bool // this node has been in a table with other members
	// died are the members this node saw declared dead and not since
	// handed slots back to (see handoff_resume.go).
	died map[string]absence
	// handed are the slots each node handed this process over (its DONE):
	// their copies from that node are not needed (see handoff_restore.go).
	handed map[string]*slotBits
	// pulled are the slots each node sent copies of in answer to this
	// node's RL.PEER PULL (IMPORT mode pull): its DONE for them skips
	// those this node imports from another node (see takeSlots).
	pulled map[string]*slotBits
	// returned are, for each member that (re)appeared in a view, its slots
	// a third node held in the view before: that node hands them back, so
	// this node does not answer the member's RL.PEER PULL for them from
	// its copies (see backedUpFor).
	returned map[string]*slotBits
	// unlost are the slots the last change took from the lost ones;
	// forgone, the slots lost here that another node owns now, whose
	// RL.PEER RELEASED this node never answers released (see
	// takeover_lost.go).
	forgone slotBits
	unlost  *slotBits
	// kept are the slots whose keys this node keeps for their owner by
	// the table, and sends it once it holds its lease (handoff_kept.go);
	// keptReplace, those of them it was handing back in mode replace.
	kept, keptReplace slotBits
	// holder is, per slot, the node this one last knew to hold its state
	// when not itself: the node it handed the slot to, or imports it from
	// (see handoff_holder.go); got, the slots whose keys a PULL's answer or
	// kept keys brought while this node imported them.
	holder [cluster.Slots]string
	got    slotBits
	// lostFrom are the lost slots whose holder died while this node
	// imported them, which come back with it (see lostComeBackLocked).
	lostFrom slotBits
}

// state returns slot's handoff state, nil when it follows the table.
//
// Every keyed request asks, and slots is 128 KiB: a random slot's entry
// is a cache miss, 5% of a forwarding node's CPU. Outside a handoff no
// slot has a state, and one shared counter says so.
func (h *handoff) state(slot int) *slotState {
	if h.active.Load() == 0 {
		return nil
	}
	return h.slots[slot].Load()
}

// set sets slot's state. active never counts fewer slots than have a
// state: it grows before a state appears and shrinks after one goes, so
// a reader that finds it 0 finds every slot following the table.
func (h *handoff) set(slot int, st *slotState) {
	if st != nil {
		h.active.Add(1)
	}
	if old := h.slots[slot].Swap(st); old != nil {
		h.active.Add(-1)
	}
}

// swap sets slot's state to st if it is old, and reports whether it did.
func (h *handoff) swap(slot int, old, st *slotState) bool {
	if st != nil {
		h.active.Add(1)
	}
	ok := h.slots[slot].CompareAndSwap(old, st)
	switch {
	case !ok && st != nil:
		h.active.Add(-1)
	case ok && old != nil:
		h.active.Add(-1)
	}
	return ok
}

// notify wakes the requests waiting for a slot's state to change.
func (h *handoff) notify() {
	h.changeMu.Lock()
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	h.changeMu.Unlock()
}

// waitChange waits at most d for slot's state to be other than st.
func (h *handoff) waitChange(slot int, st *slotState, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		h.changeMu.Lock()
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.changeMu.Unlock()
		if h.state(slot) != st {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}

// moving counts the slots being imported and being migrated out now.
func (h *handoff) moving() (importing, migrating int) {
	for i := range h.slots {
		if st := h.slots[i].Load(); st != nil {
			switch st.now() {
			case modeImporting:
				importing++
			case modeCopying, modeGated:
				migrating++
			}
		}
	}
	return importing, migrating
}

// barrier lets a cut wait until every local run that might have read a
// slot's state before the cut changed it has finished, so that the last
// copy of the slot's keys includes its change. A run enters before it
// reads the state and leaves after it ran; wait flips the epoch twice and
// waits each side to drain, so a run that entered before wait began is
// finished by the time wait returns, and one that enters later reads the
// new state. It costs a run two atomic additions, on one of a few counters.
type barrier struct {
	epoch   atomic.Uint32
	stripes [8]struct {
		n [2]atomic.Int64
		_ [48]byte // a cache line each, so the stripes do not share one
	}
}

// enter registers a run of connection id and returns its ticket for leave.
func (b *barrier) enter(id int64) uint32 {
	e := b.epoch.Load() & 1
	b.stripes[id&7].n[e].Add(1)
	return e
}

func (b *barrier) leave(id int64, ticket uint32) { b.stripes[id&7].n[ticket].Add(-1) }

// wait returns once every run that entered before it was called has left.
func (b *barrier) wait() {
	for range 2 {
		old := (b.epoch.Add(1) - 1) & 1
		for i := range b.stripes {
			for b.stripes[i].n[old].Load() != 0 {
				time.Sleep(50 * time.Microsecond) // a run is arithmetic under a shard lock: microseconds
			}
		}
	}
}

// handoffStats count the slots and keys this node moved, for INFO and /metrics.
type handoffStats struct {
	slotsIn, slotsOut atomic.Int64
	keysIn, keysOut   atomic.Int64
	bytesIn, bytesOut atomic.Int64
	moving            atomic.Int64 // migrations and imports under way
	lastMoveUsec      atomic.Int64 // how long the last migration out took, to its cut
	importTimeouts    atomic.Int64 // slots whose import was given up after importWait
	crossedCut        atomic.Int64 // requests sent back to the old owner that reached it after its cut
}

// replicaDelegate is what the replicator asks of this node (replica.Delegate).
type replicaDelegate struct{ s *Server }

func (d replicaDelegate) View() *cluster.View { return d.s.cl.view() }
func (d replicaDelegate) UnixNano() int64     { return d.s.unixNano() }

// Mono is the lease's clock, which mayServe compares Fresh's deadlines with.
func (d replicaDelegate) Mono() int64 {
	if l := d.s.cl.lease; l != nil {
		return l.Now()
	}
	return int64(time.Since(d.s.started))
}

func (d replicaDelegate) Importing() bool {
	in, _ := d.s.cl.ho.moving()
	return in > 0
}

// startReplicas starts shipping, if replicas are on, and returns the stop
// of every background task: shipping first, then stop's.
func (s *Server) startReplicas(stop func()) func() {
	if s.cl == nil || s.cl.repl == nil {
		return stop
	}
	r := s.cl.repl
	r.Start()
	return func() {
		r.Close()
		stop()
	}
}
