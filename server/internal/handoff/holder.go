package handoff

import (
	"slices"
	"strings"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// A node's table says who owns a slot, not who holds its state: tables
// differ for a moment between nodes, and a slot moved on one side of a
// split is unknown to the other. TestRedPausedAtHeal: the majority's n4
// handed slots to n2, which served them and was then paused; after the
// heal n1's table gave the slots to n1 with n4 as their old owner, n4
// (not holding them, its own table naming n1) answered RL.PEER RELEASED,
// and n1 served them from nothing while n2, resumed, still held their
// keys.
//
// So each node remembers, per slot, the node it last knew to hold the
// slot's state when that is not itself: the node it handed the slot to (a
// handoff's cut, kept keys sent), or the node it imports the slot from.
// It answers RL.PEER RELEASED for such a slot only to that node; anyone
// else is told to ask it (the answer's "ASK node slots", cluster.ReleasedAsk),
// and a node that gains the slot imports it from that node rather than
// from its table's old owner. An importer told to ask X imports from X;
// when X is not in its table (X's death was confirmed), it serves the slot
// only as it would a slot taken from a dead X: after the takeover's wait,
// if it holds X's copies of it, and otherwise not at all (lost, until X or
// an operator's RL.CLUSTER FORGET: see lost.go).

// setHolder records that node holds slots' state ("" for this node). The
// caller holds switchMu.
func (h *handoff) setHolder(node string, slots []int) {
	for _, slot := range slots {
		h.holdBy(slot, node)
	}
}

// holderOf returns the node this one last knew to hold slot's state, ""
// when that is itself or none.
func (n *Node) holderOf(slot int) string {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	return n.ho.holder[slot]
}

// noteHolder is setHolder for a caller that does not hold switchMu.
func (n *Node) noteHolder(node string, slots []int) {
	n.switchMu.Lock()
	n.ho.setHolder(node, slots)
	n.switchMu.Unlock()
}

// releasedAnswer formats RL.PEER RELEASED's answer: the released slots
// (or NONE), then for each other holder "ASK node slots".
func releasedAnswer(out []int, ask map[string][]int) string {
	var sb strings.Builder
	if len(out) == 0 {
		sb.WriteString(releaseNone)
	} else {
		sb.WriteString(formatSlots(out))
	}
	for node, slots := range ask {
		sb.WriteString(" " + cluster.ReleasedAsk + " " + node + " " + formatSlots(slots))
	}
	return sb.String()
}

// parseReleased reads releasedAnswer's output.
func parseReleased(rep string) (released []int, ask map[string][]int, ok bool) {
	f := strings.Fields(rep)
	if len(f) == 0 || (len(f)-1)%3 != 0 {
		return nil, nil, false
	}
	if f[0] != releaseNone {
		if released, ok = parseSlots(f[0]); !ok {
			return nil, nil, false
		}
	}
	for i := 1; i < len(f); i += 3 {
		if f[i] != cluster.ReleasedAsk {
			return nil, nil, false
		}
		slots, ok := parseSlots(f[i+2])
		if !ok {
			return nil, nil, false
		}
		if ask == nil {
			ask = map[string][]int{}
		}
		ask[f[i+1]] = append(ask[f[i+1]], slots...)
	}
	return released, ask, true
}

// askElsewhere acts on an old owner's word that another node, holder,
// holds slots, which this node imports in state st: it imports them from
// holder, or, holder being out of its table (its death confirmed), serves
// them as it would slots taken from a dead holder.
func (n *Node) askElsewhere(st *SlotState, holder string, slots []int) {
	n.switchMu.Lock()
	v := n.cur.Load()
	if len(st.past) >= len(v.Table.Nodes()) {
		n.switchMu.Unlock()
		// As many ASKs as members, and still no holder: the nodes' records
		// point round in a circle. The import waits on its old owner, as
		// an import that is not released does, until a node hands the
		// slots over or the table moves them; it asks again every
		// releaseRetry but follows no further ASK.
		return
	}
	if len(st.past)+1 == len(v.Table.Nodes()) {
		n.log.Warn("cluster: an import was sent on by as many ASKs as there are members; it waits on the last one named, following no more",
			"from", st.peer.Name, "holder", holder, "slots", len(slots))
	}
	var moved, gone, came []int
	node, inTable := v.Table.Node(holder)
	for _, slot := range slots {
		cur := n.ho.state(slot)
		if cur != st || holder == v.Self || v.Table.Owner(slot).Name != v.Self {
			continue
		}
		if n.ho.got.Has(slot) && n.ho.gotFrom[slot] == holder {
			n.ho.set(slot, nil) // the holder's keys came already: see keptBehind
			n.ho.holdBy(slot, "")
			n.ho.got[slot/64] &^= 1 << (slot % 64)
			came = append(came, slot)
			continue
		}
		n.ho.holdBy(slot, holder)
		if inTable {
			n.ho.set(slot, &SlotState{mode: ModeImporting, peer: node, until: time.Now().Add(releaseRetry), keep: st.keep, past: append(slices.Clip(st.past), st.peer.Name)})
			moved = append(moved, slot)
		} else {
			n.ho.set(slot, nil)
			gone = append(gone, slot)
		}
	}
	var was replica.SlotBits // lost already: see rejoinLost
	tk := n.takeover.Load()
	for _, slot := range gone {
		if tk.Lost(slot) {
			was[slot/64] |= 1 << (slot % 64)
		}
	}
	lost := n.fromDeadLocked(gone, holder)
	if st.keep {
		for _, slot := range gone {
			if n.ho.lostFrom.Has(slot) && !was.Has(slot) {
				n.ho.ownLost[slot/64] |= 1 << (slot % 64) // its keys may be the state: see backKeeps
			}
		}
	}
	n.switchMu.Unlock()
	if len(came) > 0 {
		n.ho.notify()
		n.log.Info("cluster: an import's old owner named the node whose kept keys came; serving the slots from them",
			"from", st.peer.Name, "holder", holder, "slots", len(came))
	}
	if len(moved)+len(gone) == 0 {
		return
	}
	n.ho.notify()
	n.log.Info("cluster: an import's old owner handed the slots to another node; importing them from it",
		"holder", holder, "in_table", inTable, "importing", len(moved), "taken_over", len(gone)-lost, "lost", lost)
	if len(moved) > 0 {
		time.AfterFunc(releaseRetry+time.Millisecond, n.expireImports)
	}
}

// fromDeadLocked makes slots, whose state holder held when its death was
// confirmed, wait as slots taken from a dead owner do: until holder's
// lease has run out (cluster.Lease.WaitFor), if this node holds holder's
// copies of them (or keeps no replicas, when a dead owner's slots are
// served from empty state), and otherwise
// lost (lost.go). It returns how many are lost. The caller holds
// switchMu.
func (n *Node) fromDeadLocked(slots []int, holder string) int {
	if n.lease == nil || len(slots) == 0 {
		return 0
	}
	var waits, lost []int
	for _, slot := range slots {
		n.ho.holdBy(slot, holder) // lost until it comes back: see lostComeBack
		if n.repl == nil || n.repl.HeldBy(slot, holder) {
			waits = append(waits, slot)
		} else {
			lost = append(lost, slot)
			n.ho.lostFrom[slot/64] |= 1 << (slot % 64)
		}
	}
	if len(waits) > 0 {
		now := n.lease.Now()
		n.takeover.Store(n.takeover.Load().With(waits, now, n.lease.WaitFor(holder, now)))
	}
	if len(lost) > 0 {
		tk := n.takeover.Load()
		var bits [cluster.Slots / 64]uint64
		for slot := range cluster.Slots {
			if tk.Lost(slot) {
				bits[slot/64] |= 1 << (slot % 64)
			}
		}
		for _, slot := range lost {
			bits[slot/64] |= 1 << (slot % 64)
		}
		n.takeover.Store(tk.WithLost(&bits))
	}
	return len(lost)
}

// diedIn reports whether v lists node among the members declared dead.
func diedIn(v *cluster.View, node string) bool {
	for _, m := range v.Gone {
		if m.Name == node && m.State == cluster.StateDead {
			return true
		}
	}
	return false
}

// notePushed marks, of slots, those this node imports: a PULL's answer or
// kept keys brought their keys, which are the slot's state if the table
// moves the slot on before the import ends (see slotChange).
func (n *Node) notePushed(from string, slots []int) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	for _, slot := range slots {
		if st := n.ho.state(slot); st != nil && st.mode == ModeImporting {
			n.ho.got[slot/64] |= 1 << (slot % 64)
			n.ho.gotFrom[slot] = from
		}
	}
}

// lostComeBackLocked ends the loss of the slots this node lost because
// the node that held them died (fromDeadLocked), once nv has that node
// again: each imports from it, which hands it over, sends the keys it
// kept, or says it released the slot (it never held it: a rejoin's guess,
// say), as any import. The table may keep giving such a slot to this
// node, so without it the slot stayed lost until an RL.CLUSTER FORGET.
// The import asks at once whether the node released the slot, rather
// than after importWait: the slot has been down since the node died, and
// the answer is as safe now as later (a node that hands the slot over, or
// keeps its keys, or does not hold its lease yet, says it did not); in
// TestRedPausedAtHeal the wait was most of the 6 s the test gives the
// resumed node. The caller holds switchMu, after noteLost.
func (n *Node) lostComeBackLocked(nv *cluster.View) {
	tk := n.takeover.Load()
	if tk.LostSlots() == 0 {
		return
	}
	var bits [cluster.Slots / 64]uint64
	back := 0
	for slot := range cluster.Slots {
		if !tk.Lost(slot) {
			continue
		}
		holder := n.ho.holder[slot]
		node, ok := nv.Table.Node(holder)
		if !n.ho.lostFrom.Has(slot) || holder == "" || !ok || holder == nv.Self || nv.Table.Owner(slot).Name != nv.Self || n.ho.state(slot) != nil {
			bits[slot/64] |= 1 << (slot % 64)
			continue
		}
		// A rejoin's own slot, lost while it waited keeping its keys
		// (ownLost), goes on waiting so: its keys are the slot's state
		// unless the import replaces them, and they are kept for the
		// slot's next owner if the table moves it on (slotChange). The
		// simulation's seed 500: n1 served a dead n4's slot, rejoined, lost
		// it while waiting on n2, imported it from n2 when n2 came back,
		// and, with n4 back, sent n4 neither its keys nor a handoff; its
		// DONE without copies let n4 serve the slot from nothing.
		n.ho.set(slot, &SlotState{mode: ModeImporting, peer: node, until: time.Now(), keep: n.ho.ownLost.Has(slot)})
		n.ho.lostFrom[slot/64] &^= 1 << (slot % 64)
		n.ho.ownLost[slot/64] &^= 1 << (slot % 64)
		n.ho.keptLost[slot/64] &^= 1 << (slot % 64)
		back++
	}
	if back > 0 {
		n.takeover.Store(tk.WithLost(&bits))
		time.AfterFunc(time.Millisecond, n.expireImports) // not under switchMu
		n.log.Info("cluster: the node that held lost slots is back; importing them from it", "slots", back)
	}
}

// unloseLocked ends the loss of slots that from handed to this node (its
// DONE): from is their holder here, which came back and handed them over
// though the table never stopped giving them to this node (a rejoin's own
// slots, whose owner died and came back); or the DONE ends a live handoff
// (not one of pulled, the slots a PULL's answer or kept keys brought):
// from held its lease and served the slots (see migrate), so its keys are
// their state, whatever node this one last knew to hold them. Another
// node's PULL answer (a backup's copies) or kept keys end no loss: they
// are not from the holder (lostElsewhereLocked refuses them).
//
// The holder of a lost slot can be a stale record: CI's TestRedPausedAtHeal
// at 98873dd, n2 had handed chunk 789-809 to n1 as the cluster formed, and
// n1 to n4 when n4 joined; at n1's confirmed death n2 gained the chunk
// with n1 as its holder and lost it (it held none of n1's copies); n4
// handed it over, its 20 used of 20, and n2 took the keys but kept the
// chunk lost. At n2's resume the table gave the chunk to n4 again: n2,
// having lost it, handed nothing over, and answered n4's RL.PEER RELEASED
// "ASK n1"; n1, which had handed it to n4, released it to n4, and n4
// served it from nothing while n2 held its keys: 22 of 20
// (TestHandoffEndsALossWhateverItsHolder). Before, only the holder's DONE
// ended a loss.
//
// The caller holds switchMu, before takeSlots clears the holder.
func (n *Node) unloseLocked(from string, slots []int, pulled *replica.SlotBits) {
	tk := n.takeover.Load()
	if tk.LostSlots() == 0 {
		return
	}
	var bits [cluster.Slots / 64]uint64
	for slot := range cluster.Slots {
		if tk.Lost(slot) {
			bits[slot/64] |= 1 << (slot % 64)
		}
	}
	back := 0
	for _, slot := range slots {
		if bits[slot/64]&(1<<(slot%64)) != 0 && (n.ho.holder[slot] == from || !pulled.Has(slot)) {
			bits[slot/64] &^= 1 << (slot % 64)
			n.ho.lostFrom[slot/64] &^= 1 << (slot % 64)
			n.ho.ownLost[slot/64] &^= 1 << (slot % 64)
			n.ho.keptLost[slot/64] &^= 1 << (slot % 64)
			back++
		}
	}
	if back > 0 {
		n.takeover.Store(tk.WithLost(&bits))
	}
}

// rejoinLost: a slot lost here when this node rejoins (its holder died,
// and this node held none of the holder's copies: fromDeadLocked) was
// never served here since, so its keys are not the slot's state. The
// rejoin's import of it still asks for it as a rejoin's does (KEEP), but
// should that import be lost too (an ASK names the dead holder, or its
// old owner dies), the slot is no rejoin's own lost slot (ownLost): it is
// not served from this node's keys when the lease proves the death
// unconfirmed (rejoinUnconfirmed), nor are those keys kept for its owner
// (backKeeps). Before, it was: the simulation's seed 3122 at a 1 s import
// wait, n2 had 11822 lost from n3 (dead, having never served it, while
// n1, paused, held its 16), rejoined, was told to ASK n3, and once n1
// resumed and n2's lease proved no majority had confirmed n2's death, n2
// served the slot from 0. (Leaving such a slot out of the rejoin, which
// the model also closes 3122 with, changes the questions a rejoin sends,
// and on the model that reordered the replayed failing schedules into
// other, still open, losses: 680, 767 and 1379 at 1 s, cold 2426 at 5 s.)

// rejoinImportLocked is the import of slot, which this node owns, at a
// rejoin: from ru, keeping this node's keys (see rejoin), unless this node
// handed the slot to another node, which it then imports it from as any
// import, its keys not being the slot's state (TestRedPausedAtHeal: n4,
// which had handed slots to n2, kept nothing of them, and its push made
// their next owner serve them from nothing). The caller holds switchMu.
func (n *Node) rejoinImportLocked(v *cluster.View, slot int, ru cluster.Node, until time.Time) *SlotState {
	if h := n.ho.holder[slot]; h != "" && h != v.Self {
		if node, ok := v.Table.Node(h); ok {
			return &SlotState{mode: ModeImporting, peer: node, until: until}
		}
	}
	return &SlotState{mode: ModeImporting, peer: ru, until: until, keep: true}
}

// takesOverFromCopies reports whether this node, gaining slot in nv from
// its old owner by old, takes it over from that owner's copies, whatever
// its holder record says: the old owner's death was confirmed, and this
// node holds the owner's copies of the slot from its full sync (HeldBy,
// read here before the replicas' hook promotes them and forgets whose
// they were). The copies are at least as new as any holder record: a
// record is made while this node's table names it the slot's owner (an
// import, a loss), which drops its copies of the slot, or as it hands the
// slot on (a cut, kept keys), after which only the new holder's full sync
// makes it hold copies (KeepHanded's noteKept names the new holder too).
// So the owner that shipped them held the slot after the record, and the
// record's node, asked, could only point on to that owner, whose death
// then found the copies promoted and no longer counted: lost, the keys
// CLUSTERDOWN until it came back (TestPausedOwnerAnswersNothingStale/30s
// in CI: p2 imported p1's slots from p0, its join's guess; p0 named p1,
// p1 was paused, and 3114 slots were lost while p2 held their state).
// The caller holds switchMu.
func (n *Node) takesOverFromCopies(old, nv *cluster.View, slot int) bool {
	if n.lease == nil || n.repl == nil {
		return false
	}
	prev := old.Table.Owner(slot).Name
	return prev != nv.Self && !nv.Table.Has(prev) && diedIn(nv, prev) && n.repl.HeldBy(slot, prev)
}

// errLostElsewhere is the answer to an IMPORT pull or handback, or the
// DONE after one, that covers a slot lost here with another holder (see
// lostElsewhereLocked). Like errKeepsOwn it is no refusal that gives the
// keys up (kept.go): they wait in the sender for the holder or the table.
const errLostElsewhere = "TRYAGAIN a slot of these is lost here, and another node holds its state"

// lostElsewhere reports whether kept keys or a PULL's answer from node
// from (IMPORT mode pull or handback) cover a slot of slots that must not
// take them: see lostElsewhereLocked.
func (n *Node) lostElsewhere(from string, slots []int) bool {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	for _, slot := range slots {
		if n.lostElsewhereLocked(from, slot) {
			return true
		}
	}
	return false
}

// lostElsewhereLocked reports whether slot is lost here, not imported,
// and held by another node than from, whose kept keys or PULL answer for
// it this node then refuses. Taken, the keys left the slot lost, and once
// the table moved it on, this node forwent it and pointed the new owner
// at that holder, which never had it and released it, while the sender
// had dropped its keys (TestRedMinorityPausedAtHeal: n4 pushed its kept
// keys of chunk 789-809 to n2, which had the chunk lost with holder n1,
// its last owner by n2's table; at n1's return n1 released the chunk to
// n4, which served it from nothing: 21 to 23 of 20). Refused, the sender
// keeps them (sendKept), or a backup keeps its copies. The caller holds
// switchMu.
func (n *Node) lostElsewhereLocked(from string, slot int) bool {
	h := n.ho.holder[slot]
	return h != "" && h != from && n.ho.state(slot) == nil && n.takeover.Load().Lost(slot)
}
