package handoff

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// Probe reaches into a Node for the front's end-to-end tests: they run
// whole nodes (a membership, peers, the router), so they cannot be this
// package's own tests, and they set and read the handoff's state as the
// node's own code does. Nothing but tests calls it.
type Probe struct{ n *Node }

// Probe returns the node's Probe.
func (n *Node) Probe() Probe { return Probe{n} }

// StateOf describes a slot's handoff state for NewState.
type StateOf struct {
	Mode  Mode
	Peer  cluster.Node
	Until time.Time
	Keep  bool
	Guess bool
	Mg    *Migration
}

// NewState returns the state s describes.
func NewState(s StateOf) *SlotState {
	return &SlotState{mode: s.Mode, peer: s.Peer, until: s.Until, keep: s.Keep, guess: s.Guess, mg: s.Mg}
}

// Until is when an import stops waiting.
func (st *SlotState) Until() time.Time { return st.until }

// Asks counts the ASKs that re-pointed an import.
func (st *SlotState) Asks() int { return len(st.past) }

// Past names the nodes whose ASKs re-pointed an import, in order.
func (st *SlotState) Past() []string { return st.past }

// SlotMode is the mode the state was made with (Mode: its mode now).
func (st *SlotState) SlotMode() Mode { return st.mode }

// NewMigration returns a migration of slots to node to, gated.
func NewMigration(to cluster.Node, slots []int) *Migration {
	mg := &Migration{to: to, slots: slots, started: time.Now()}
	mg.gate()
	return mg
}

// Open ends mg's gate with its slots in mode m.
func (mg *Migration) Open(m Mode) { mg.open(m) }

// Set sets slot's state.
func (p Probe) Set(slot int, st *SlotState) { p.n.ho.set(slot, st) }

// Notify wakes the requests waiting for a slot's state to change.
func (p Probe) Notify() { p.n.ho.notify() }

// Hook runs the handoff's own table-change hook for old and nv.
func (p Probe) Hook(old, nv *cluster.View) {
	p.n.switchMu.Lock()
	defer p.n.switchMu.Unlock()
	p.n.handoffHook(old, nv)
}

// Migrate starts moving slots to node to; leaving makes it a leave's,
// whose table names this node until the cut.
func (p Probe) Migrate(to cluster.Node, slots []int, leaving bool) {
	p.n.switchMu.Lock()
	defer p.n.switchMu.Unlock()
	if leaving {
		p.n.ho.leaving.Store(true)
	}
	p.n.startMigration(to, slots, nil)
}

// TakeSlots is RL.PEER DONE's taking of slots from node from.
func (p Probe) TakeSlots(from string, slots []int) ([]int, string) { return p.n.takeSlots(from, slots) }

// NotePulled records how node from sends copies of slots.
func (p Probe) NotePulled(from string, slots []int, pull bool) { p.n.notePulled(from, slots, pull) }

// BackedUpFor is what RL.PEER PULL from node from would be sent of slots.
func (p Probe) BackedUpFor(from string, slots []int) (cluster.Node, []int) {
	return p.n.backedUpFor(from, slots)
}

// HolderOf is the node this one last knew to hold slot's state.
func (p Probe) HolderOf(slot int) string { return p.n.holderOf(slot) }

// NoteHolder records that node holds slots' state.
func (p Probe) NoteHolder(node string, slots []int) { p.n.noteHolder(node, slots) }

// ExpireImports asks the old owners of the imports that waited their time.
func (p Probe) ExpireImports() { p.n.expireImports() }

// Released asks node to which of slots it released to this node.
func (p Probe) Released(to cluster.Node, slots []int) ([]int, map[string][]int, error) {
	return p.n.released(to, slots, false, nil, true)
}

// AskElsewhere acts on an old owner's ASK for slots imported in state st.
func (p Probe) AskElsewhere(st *SlotState, holder string, slots []int) {
	p.n.askElsewhere(st, holder, slots)
}

// CopyFrom sends m's keys of slots to node to, as a migration does.
func (p Probe) CopyFrom(m *shard.Map, to cluster.Node, slots []int, done bool, first string) (int, int, error) {
	return p.n.copyFrom(m, to, slots, done, first)
}

// DropSlots deletes this node's keys in slots.
func (p Probe) DropSlots(slots []int) { p.n.dropSlots(replica.SlotSet(slots)) }

// Keep marks slot's keys as kept for its owner.
func (p Probe) Keep(slot int) {
	p.n.switchMu.Lock()
	defer p.n.switchMu.Unlock()
	p.n.ho.keep(slot)
}

// Pushing sets whether a push of kept keys runs.
func (p Probe) Pushing(on bool) { p.n.pushing.Store(on) }

// PushKept sends the kept keys to their owners.
func (p Probe) PushKept() { p.n.pushKept() }

// WaitImportsFromDead is the hook's handling of imports from members nv says died.
func (p Probe) WaitImportsFromDead(nv *cluster.View) {
	p.n.switchMu.Lock()
	defer p.n.switchMu.Unlock()
	p.n.waitImportsFromDead(nv)
}

// LostComeBack is the hook's handling of lost slots whose holder nv has again.
func (p Probe) LostComeBack(nv *cluster.View) {
	p.n.switchMu.Lock()
	defer p.n.switchMu.Unlock()
	p.n.lostComeBackLocked(nv)
}

// RejoinUnconfirmed is what the lease's proof of an unconfirmed death
// runs (unconfirmed.go).
func (p Probe) RejoinUnconfirmed() { p.n.rejoinUnconfirmed() }

// FromDead makes slots, whose state holder held when it died, wait or be lost.
func (p Probe) FromDead(slots []int, holder string) {
	p.n.switchMu.Lock()
	defer p.n.switchMu.Unlock()
	p.n.fromDeadLocked(slots, holder)
}

// Downs counts the keyed commands answered as down for reason ("lease",
// "takeover", "lost", "waiting" or "backup").
func (p Probe) Downs(reason string) int64 {
	for i, name := range downNames {
		if name == reason {
			return p.n.down.n[i].Load()
		}
	}
	return 0
}

// FormatSlots writes slots as RL.PEER's ranges: "0-99,205,300-310".
func FormatSlots(slots []int) string { return formatSlots(slots) }

// RouteOf is the route a shard.Entry wants for key: nil for a key of its own.
func RouteOf(key []byte) []byte { return routeOf(key) }
