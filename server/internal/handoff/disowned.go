package handoff

import "github.com/rlstore/rlstore/cluster"

// disownedBy: a handoff that a rejoin disowns keeps its keys for the
// slot's owner (kept.go), and they went with a DONE, which ends the
// owner's import when it imports the slot from this node. But a rejoin
// means this node was declared dead while it held the slot, and if a
// majority confirmed that death, the slot's backup in the table this node
// held it by took it over from its copies and served it since: this
// node's keys are older than that node's. The simulation's cold seed 1535
// at a 1 s import wait: n4 took slot 5654 over at n0's confirmed death
// and served it to 97; cut off, its own death was confirmed, and n1, its
// backup, took the slot over and served it to 102. At the heal the table
// gave the slot back to n0, whose rejoin imported it from n4; n4's rejoin
// disowned its handoff to n0, and n4, holding its lease first, pushed its
// kept 97 with a DONE, which ended n0's import while n1 still kept 102.
// The join took n1's keys when they came, but n0 served from 97 until
// then: the admissions between were lost.
//
// So a disowned handoff's kept keys go without a DONE, as keptBehind's
// do, naming that backup the slot's holder, when the lease says a
// majority may have confirmed the death (cluster.Lease.MayBeConfirmed: the
// members that reported deaths this node acknowledged since its last
// proof are a quorum of the known members): the owner stores them and
// goes on importing, asks this node RELEASED and is told "ASK" the
// backup, which hands over what it served, or, having never served the
// slot, releases it, and the owner serves the keys that came. Whether the
// backup took the slot over is read as the push goes, not at the rejoin:
// the first report of a death starts the rejoin, and the others come
// after it. A death only a minority reported moved no slot, and a rejoin
// proved to follow an unconfirmed death (lease_rejoin.go) clears the
// reports: the keys go with a DONE, as before.

// noteDisowned records, for slot, kept from a handoff a rejoin disowned,
// its backup in held, the table this node held it by (nil: none). The
// caller holds switchMu.
func (h *handoff) noteDisowned(slot int, held *cluster.Table, self string) {
	if held == nil || held.Owner(slot).Name != self {
		return
	}
	ru, ok := held.RunnerUp(slot)
	if !ok || ru.Name == self {
		return
	}
	if h.disownBy == nil {
		h.disownBy = map[int]string{}
	}
	h.disownBy[slot] = ru.Name
}

// disownedBehind marks slot's kept keys, a disowned handoff's, as
// keptBehind the backup noteDisowned recorded, when that node is in v's
// table, does not own the slot there, and a majority may have confirmed
// this node's death (see disownedBy). The record is read once: the push
// that follows goes one way or the other. The caller holds switchMu.
func (n *Node) disownedBehind(v *cluster.View, slot int) {
	by, ok := n.ho.disownBy[slot]
	if !ok {
		return
	}
	delete(n.ho.disownBy, slot)
	if by == v.Table.Owner(slot).Name || !v.Table.Has(by) || n.lease == nil || !n.lease.MayBeConfirmed(n.knownNames(v)) {
		return
	}
	if n.ho.keptBehind == nil {
		n.ho.keptBehind = map[int]string{}
	}
	n.ho.keptBehind[slot] = by
}

// knownNames is the known member set (Config.Known), or v's table's
// members when it is not set.
func (n *Node) knownNames(v *cluster.View) []string {
	if n.cfg.Known != nil {
		return n.cfg.Known()
	}
	var names []string
	for _, m := range v.Table.Nodes() {
		names = append(names, m.Name)
	}
	return names
}
