package handoff

import (
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// A slot's state lives on its owner and, with --replicas, on its backups:
// the owners the slot would have without its owner. When the owner is
// declared dead, its backup takes the slot over from its copies. When the
// owner and the backup are both declared dead (both on the minority side
// of a 3/2 split, say, or killed together), no member this node sees has
// the slot's state, and the node the table now names would serve it from
// nothing: every key of it admitted its limit again (the 3/2 split test:
// five keys of thirty, 40 admissions of a limit of 20).
//
// So, as a Redis Cluster whose master and replicas are all gone leaves
// their slots uncovered, a node serves a slot it gains from a dead owner
// only if it holds the slot's copies from that owner: a full sync of the
// owner's (RL.PEER SYNC, on a connection whose handshake named the owner)
// named the slot among those it backs up, and nothing dropped them since. A process that restarted, or a backup the owner
// never reached (it was cut off, paused, or named another backup in a
// table of its own), holds none. Otherwise the slot is lost here:
// keyed commands for it are answered as down (--owner-unreachable), until
// the owner or its backup comes back (the table then gives the slot to it,
// and this node hands nothing over: it never served the slot), or an
// operator forgets them with RL.CLUSTER FORGET, which serves the slot from
// what is left. Without replicas nothing holds a copy, and a dead owner's
// slots are served from empty state, as docs/cluster.md says.
//
// A lost slot the table moves to another node (a member came back that
// ranks above this node for it) is forgone here: this node hands nothing
// over, and answers the new owner's RL.PEER RELEASED that it holds it, so
// that the new owner does not serve it from nothing either; it waits for
// the holder to come back, as this node did.

// A forgone slot that the table gives back to this node while its holder
// (the dead node whose state it was) is still out of the table is lost
// again, unless this node holds the holder's copies: the holder has its
// state, as when the slot was lost here first. Before, it was imported
// from the table's old owner as any gained slot, which released it (that
// node had it forgone too, or never held it): the simulation's seed 3665,
// n4 had slot 12850 lost from n0 (paused, confirmed dead, holding 19),
// forgone to n1 and back, and served it from 0. (Taken out once because
// it moved seed 1463 onto lostBack's open gap, below; on the simulation's
// model since thirdPrev, restore.go, 1463 holds with it.)

// uncutHeld: a slot this node was handing to a member whose death is now
// confirmed, with no DONE sent (Handing: the member never took it), was
// served here all along, so it is not lost however few of the member's
// copies this node holds; the replicas leave its keys (promote). Before,
// it was lost whenever the node held none of the member's synced copies
// (the table change that first gave it the slot dropped them, and the
// member's shipments since were deltas): answered as down, and released
// to the member's rejoin (RELEASED … KEEP from the holder, lostBack),
// which served its older keys (TestNeverCutSlotBackKeepsItsKeys; the
// simulation's seed 527 at a 1 s import wait, whose model counts any
// shipment held, reaches only the promote).

// noteLost recomputes the lost slots for the view change from old to nv
// (see cluster.NextLost), and loses again the forgone slots nv gives back
// to this node while their holder is away. It runs after noteTakeovers;
// the caller holds switchMu.
func (n *Node) noteLost(old, nv *cluster.View) {
	if n.lease == nil {
		return
	}
	var held func(int, string) bool
	if n.repl != nil {
		held = func(slot int, owner string) bool { return n.repl.HeldBy(slot, owner) || n.Handing(slot) } // see uncutHeld
	}
	prev := n.takeover.Load()
	tk, unlost, fresh := cluster.NextLost(prev, old, nv, held)
	n.takeover.Store(tk)
	n.ho.unlost = (*replica.SlotBits)(unlost)
	relost := map[string][]int{}
	for slot := range cluster.Slots {
		switch {
		case n.ho.unlost.Has(slot):
			n.ho.forgone[slot/64] |= 1 << (slot % 64)
			n.ho.lostFrom[slot/64] &^= 1 << (slot % 64)
		case nv.Table.Owner(slot).Name == nv.Self && !tk.Lost(slot):
			if h := n.ho.holder[slot]; n.ho.forgone.Has(slot) && h != "" && h != nv.Self && !nv.Table.Has(h) && held != nil && !held(slot, h) {
				relost[h] = append(relost[h], slot) // its state is still the holder's
			}
			n.ho.forgone[slot/64] &^= 1 << (slot % 64)
		case tk.Lost(slot) && !prev.Lost(slot) && old != nil && old.Table.Owner(slot).Name != nv.Self:
			n.ho.holdBy(slot, old.Table.Owner(slot).Name) // its DONE, once back, ends the loss (unloseLocked)
		}
	}
	for h, slots := range relost {
		fresh += n.fromDeadLocked(slots, h)
	}
	if fresh > 0 {
		n.log.Warn("cluster: slots whose owner and backup were both declared dead are not served: no member this node sees holds their state (they come back with either, or with RL.CLUSTER FORGET)",
			"slots", fresh)
	}
}

// forgetLost serves the lost slots from what this node has: an operator
// said a member will not come back (RL.CLUSTER FORGET). It also stops
// naming dead owners to the nodes their deaths gave slots to (deadPrev):
// an asker would only have those slots lost again.
func (n *Node) forgetLost() {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	if tk := n.takeover.Load(); tk.LostSlots() > 0 {
		n.takeover.Store(tk.WithLost(&[cluster.Slots / 64]uint64{}))
	}
	n.ho.forgone = replica.SlotBits{}
	n.ho.lostFrom = replica.SlotBits{}
	n.ho.deadPrev = [cluster.Slots]string{}
	n.ho.servedPrev = replica.SlotBits{}
}
