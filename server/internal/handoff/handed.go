package handoff

import "github.com/rlstore/rlstore/shard"

// A node that hands a slot over names the node it went to the slot's
// holder, and releases the slot to that node's RL.PEER RELEASED: "I handed
// it to you". The answer was given to the member, though, not to the
// process it went to. A new process of that member (a crash and a restart,
// with no data dir, or one behind the old process's store) has lost what
// the old one got and served; released, it serves the slot from what it
// has. The simulation's seed 2804: n1 took slot 6939 over at n2's death,
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
// used. Such an import waits for a backup's PULL answer or a handoff; the
// member gone for good, an operator's RL.CLUSTER FORGET ends it.

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
// another process of from than the one the lease knows now. The caller
// holds switchMu.
func (n *Node) handedOldLocked(slot int, from string) bool {
	h := n.ho.handedTo[slot]
	now := n.incarnationOf(from)
	return h.node == from && h.inc != 0 && now != 0 && now != h.inc
}

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
