package handoff

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// An owner paused for longer than failure detection (a stopped process, a
// frozen VM, a long stall) is declared dead: the runner-ups of its slots
// take them over from their copies and go on deciding its keys. When it
// resumes, it refutes its death, and its slots come back to it. In its own
// table they never left, so a handoff would leave it its keys as they were
// before the pause, and what the others decided meanwhile would be lost
// (TestPausedOwnerResumes: every such decision admitted again).
//
// So a node that saw a member's death confirmed by a majority (a view's
// Gone lists only those: see cluster.Membership.confirmDeaths) hands its
// slots back with IMPORT mode replace: the member then takes the slots it
// thinks it never stopped serving like any other import, its keys
// replaced by the ones handed over. It waits for them first, as for any
// import: their requests go to the node handing them over until its DONE.
// The member could not serve meanwhile: the majority fenced it, so its
// lease ran out within a term of the confirmation, and it serves its slots
// again only once handed back. And no third node served them after this
// one: a node hands slots over only while it holds its lease, and it
// would have had to give up its handoffs (rejoin) for the majority to
// take them from it. So this node's is the newer state, whether or not
// its lease broke since (before fences, a node whose lease broke handed
// back in mode reset, and the member kept its older keys: the
// simulation's cause B), and whether or not it served them yet (its
// state is then the member's last shipment, and what the member decided
// after it is the documented loss).
//
// Without a majority's confirmation no slot moves, so nothing is handed
// back: a node whose table gives a member's slots to another (a join, a
// leave) hands them over with reset, and the member keeps the keys it
// has, taking only those it lacks.
//
// With a lease, the member's confirmed death is remembered until it is
// gone again (noteDeaths): a handoff of a slot that this node was moving
// to a third node when the member came back, which the third node then
// refused (its table gave the slot to the member) and this node aimed
// at the member (settle), went in mode reset once the first handback had
// forgotten the death, and the member, not yet aware that it had been
// declared dead, kept its older keys (the simulation's seed 4052: 22 of a
// slot where 27 were used). Every handoff to it goes in mode replace,
// which differs from reset only for a slot the member thinks it never
// stopped serving: with a lease, only one whose death this node saw
// confirmed.
//
// Without a lease (ClusterConfig.Lease nil), the rule is the older one: a
// node whose views kept a majority of the members it had before the
// first death replaces, and the first handback forgets the death.

// absence is what a node saw while a member it saw declared dead was away.
type absence struct {
	before int // the members of the view before the first death still counted
	least  int // the fewest members of a view since
	// rejoined: this node was declared dead itself after it saw the
	// member's death (see rejoin and backKeeps).
	rejoined bool
}

// replaces reports whether slots handed back to the member go in mode
// replace: this node held them since the member died, and nobody else.
// With a lease, the death was confirmed (see above); without one, the
// rule is the older one: this node's views kept a majority of the members
// it had before the first death.
func (a absence) replaces(l *cluster.Lease) bool {
	if l == nil {
		return 2*a.least > a.before
	}
	return true
}

// noteDeaths records the members nv says died, and forgets those it says
// left; every absence sees nv's members. The caller holds switchMu.
func (h *handoff) noteDeaths(old, nv *cluster.View) {
	n := len(nv.Table.Nodes())
	before := n + 1
	if old != nil {
		before = max(len(old.Table.Nodes()), before)
	}
	for name, a := range h.died {
		a.least = min(a.least, n)
		h.died[name] = a
		before = max(before, a.before) // a second death counts against the members before the first
	}
	for _, m := range nv.Gone {
		if m.State != cluster.StateDead {
			delete(h.died, m.Name)
			continue
		}
		if h.died == nil {
			h.died = map[string]absence{}
		}
		h.died[m.Name] = absence{before: before, least: n}
	}
}

// importAgain makes this node import slots it serves from node from, which
// hands them back after this node was declared dead: they wait for from's
// DONE, as imports do, and their keys go (see peerImport).
func (n *Node) importAgain(from string, own *replica.SlotBits) []int {
	n.switchMu.Lock()
	v := n.cur.Load()
	node, ok := v.Table.Node(from)
	var slots []int
	if ok {
		st := &SlotState{mode: ModeImporting, peer: node, until: time.Now().Add(importWait)}
		for slot := range cluster.Slots {
			if own.Has(slot) {
				n.ho.set(slot, st)
				slots = append(slots, slot)
			}
		}
	}
	n.switchMu.Unlock()
	if len(slots) == 0 {
		return nil
	}
	n.ho.notify()
	n.ho.running.wait() // runs that read a slot's state before the gate end first
	time.AfterFunc(importWait+time.Millisecond, n.expireImports)
	n.log.Warn("cluster: a node hands back slots this node was declared dead for; taking its keys for them",
		"from", from, "slots", len(slots))
	return slots
}
