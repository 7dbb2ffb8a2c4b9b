package handoff

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// A node that hands a slot over names the node it went to the slot's
// holder, and releases the slot to that node's RL.PEER RELEASED: "I handed
// it to you". The answer was given to the member, though, not to the
// process it went to. A new process of that member (a crash and a restart
// without a data dir: see RESTORED below) has lost what the old one got
// and served; released, it serves the slot from what it has. The
// simulation's seed 2804: n1 took slot 6939 over at n2's death,
// handed its 65 back to n2 and kept them as n2's copy (KeepHanded), learned
// it was declared dead (its copies as old as its death: ForgetHeld), n2
// crashed with the 65, and n1 released the slot to n2's new process, which
// served it from 0 (3983 and, at a 1 s import wait, 2363 alike).
//
// So the record names the process too, by the lease's incarnation of the
// node when the slot went (handedTo), and a later process of that node is
// not the one it went to: RELEASED releases it nothing. The slot's state
// is where the old process left it: in the copies its backups hold (its
// full syncs and shipments, up to the documented replica interval), which
// answer the new process's PULL. If this node holds them (replica.HeldBy:
// the copies KeepHanded kept, or the old process's full sync since) and
// backs the slot up for the asker, it answers the question as it answers
// that PULL, with the copies and a DONE (handedPull): the PULL's own answer
// may have come while the new process imported the slot from another node,
// which skipped it, and no table change may bring another. Copies this
// node no longer holds (forgotten at its own rejoin) go nowhere: the old
// process may have served the slot after this node's death and shipped it
// to another backup, whose copies are newer; a DONE with them, or without
// any, let the simulation's seed 3983 serve slot 6682 from 0 where 35 were
// used. Such an import waits for a backup's PULL answer or a handoff, or
// for an operator: RL.CLUSTER SETSLOT slot STABLE (RL.CLUSTER FORGET is
// for a member gone for good, and this one is alive).

// handedMark is a slot's handoff: the node it went to, and that node's
// process by the lease's answers then (0: not known).
type handedMark struct {
	node string
	inc  uint64
}

// holdBy records node as slot's holder ("" for this node or none), by
// any record but a handoff's: the process a handoff went to (handedTo)
// names the holder only until the record changes, so a rejoin that asks
// RELEASED KEEP for a slot lost here at its death is not taken for
// another process by an older handoff's mark (lostBack). The caller
// holds switchMu.
func (h *handoff) holdBy(slot int, node string) {
	h.holder[slot] = node
	h.handedTo[slot] = handedMark{}
}

// noteHandedTo records that slots went to node: it is their holder, and
// its process now the one they went to.
func (n *Node) noteHandedTo(node string, slots []int) {
	inc := n.incarnationOf(node)
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	n.ho.setHolder(node, slots)
	for _, slot := range slots {
		n.ho.handedTo[slot] = handedMark{node: node, inc: inc}
	}
}

// handedOldLocked reports whether slot, whose holder here is from, went to
// another process of from than the one the lease knows now, or to a
// process the lease had not heard from then (unknownProcess). The caller
// holds switchMu.
func (n *Node) handedOldLocked(slot int, from string) bool {
	h := n.ho.handedTo[slot]
	if h.node != from {
		return false
	}
	if h.inc == 0 {
		return n.lease != nil // see unknownProcess
	}
	now := n.incarnationOf(from)
	return now != 0 && now != h.inc
}

// unknownProcess: a slot can go to a member before this node's lease has
// heard from it (a cold start: the member started a moment ago). Its mark
// names no process, and the process that asks later may be another one:
// the simulation's cold seed 1733 at a 1 s import wait, where n2 handed
// slot 11051 (7 used) to n4 20 ms after n4 started, n4 crashed, n2 forgot
// its copies at its own rejoin (ForgetHeld), and released the slot to n4's
// next process, which served it from 0. So such a slot is released only to
// a process that claims it (HANDED: it took the slot's DONE from this
// node); any other is answered as a later process is (handedPull). The
// process it went to always took that DONE, since the cut waits for it
// (a kept push's too); a node that predates HANDED asks without it, and
// its import waits as a later process's does. Without a lease (no process
// is ever known) the slot is released as before.

// handedPull answers from's RELEASED question for slots that went to an
// older process of from as from's PULL is answered, for those whose copies
// this node holds from from (HeldBy): see above.
func (n *Node) handedPull(from string, slots []int) {
	held := slots[:0:0]
	for _, slot := range slots {
		if n.heldBy(slot, from) {
			held = append(held, slot)
		}
	}
	if len(held) == 0 {
		return
	}
	to, backed := n.backedUpFor(from, held)
	if len(backed) == 0 {
		return
	}
	n.log.Info("cluster: a new process of the node this one handed slots to asks for them; sending it their copies",
		"to", from, "slots", len(backed))
	var copies *shard.Map
	if n.repl != nil {
		copies = n.repl.Copies()
	}
	go n.sendCopies(copies, to, backed)
}

// The process mark would make a slot wait where releasing it is sound, so
// the asker may say which slots it is, for the answering node, the
// process they went to:
//
//   - HANDED names the slots of the question whose handoff (or PULL
//     answer) from the answering node this very process took: its DONE
//     ended their import here (noteHanded). The mark, read from the lease
//     at the cut, can name an older process: a member that restarted
//     after its death, handed the slot before this node's lease heard
//     from the new process, was marked with the old one, and its own
//     later question (a rejoin's, say) was answered nothing.
//   - RESTORED names the earlier processes of the asker whose store its
//     data dir restored (cluster.Lease.Restored: the process file, which
//     each process on the data dir adds itself to before it starts). Such
//     a process holds what the one the slot went to left in its store,
//     up to the data dir's fsync policy, which is a crash's documented
//     loss (README, "Replicas and durability"): released to it, the slot
//     is served as it would have been by that process.
//
// A slot so claimed is released as before the mark. A node that predates
// the words refuses the question (NOPERM), and the asker asks again
// without them (released).

// claims returns the words HANDED and RESTORED, with theirs, for a
// question to node to about slots; nil when there is nothing to claim.
func (n *Node) claims(to string, slots []int) [][]byte {
	n.switchMu.Lock()
	got := n.ho.handed[to]
	var mine []int
	for _, slot := range slots {
		if got.Has(slot) {
			mine = append(mine, slot)
		}
	}
	n.switchMu.Unlock()
	var out [][]byte
	if len(mine) > 0 {
		out = append(out, []byte(cluster.ReleasedHanded), []byte(formatSlots(mine)))
	}
	if n.lease != nil && len(n.lease.Restored()) > 0 {
		out = append(out, []byte(cluster.ReleasedRestored), formatIncs(n.lease.Restored()))
	}
	return out
}

// sameProcess reports whether q's asker claims to be, for slot, the
// process inc (the slot's mark) names: slot was handed to it, or inc's
// store is its own.
func (q releasedQ) sameProcess(slot int, inc uint64) bool {
	return q.handed.Has(slot) || slices.Contains(q.restored, inc)
}

// handedSlots reads HANDED's slots; nil if they do not parse.
func handedSlots(spec string) *replica.SlotBits {
	slots, ok := parseSlots(spec)
	if !ok {
		return nil
	}
	var b replica.SlotBits
	for _, slot := range slots {
		b[slot/64] |= 1 << (slot % 64)
	}
	return &b
}

// formatIncs writes incarnations as RESTORED carries them: "12,34".
func formatIncs(incs []uint64) []byte {
	var b []byte
	for i, inc := range incs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, inc, 10)
	}
	return b
}

// parseIncs reads formatIncs's text; nil if it does not parse.
func parseIncs(s string) []uint64 {
	var incs []uint64
	for _, part := range strings.Split(s, ",") {
		inc, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return nil
		}
		incs = append(incs, inc)
	}
	return incs
}
