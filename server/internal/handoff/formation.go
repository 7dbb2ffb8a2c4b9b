package handoff

import (
	"context"
	"log/slog"

	"github.com/rlstore/rlstore/cluster"
)

// logChange logs, at debug, what a table change left: the table's
// members, whether this node counts its previous table, and the slots it
// imports by old owner (a guess or not) and migrates by new owner. The
// caller holds switchMu.
func (n *Node) logChange(nv *cluster.View, outs map[string][]int) {
	if !n.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	h := &n.ho
	var members []string
	for _, m := range nv.Table.Nodes() {
		members = append(members, m.Name)
	}
	in := map[string]int{}
	for slot := range cluster.Slots {
		if st := h.state(slot); st != nil && st.mode == ModeImporting {
			k := st.peer.Name
			if st.guess {
				k += "(guess)"
			}
			if st.keep {
				k += "(keep)"
			}
			in[k]++
		}
	}
	out := map[string]int{}
	for to, slots := range outs {
		out[to] = len(slots)
	}
	n.log.Debug("cluster: table change", "epoch", nv.Table.Epoch(), "members", members, "counts", h.counts,
		"importing", in, "migrating", out)
}

// An import's slots are served by its old owner until its DONE, which
// serves them while it copies them out (a live handoff). Some imports
// have no such owner: a joiner's guess at a slot's backup, a restart's
// or a rejoin's import from a backup whose table names this node the
// owner, or an old owner that never held the slot (a table of a moment
// at a cold start). That node answers the requests this node
// sends it HANDEDOFF, and after its gate waits this node answers
// TRYAGAIN, while the nodes that forward to it time out and answer
// -CLUSTERDOWN. CLUSTER INFO's cluster_slots_fail counts such slots
// (ImportDown), as it counts the slots it may not serve itself.

// ImportDown reports whether slot is one this node imports whose
// requests no node serves, as far as it knows: its old owner answered a
// request for the import's slots HANDEDOFF, or the import has waited its
// import wait and asks RL.PEER RELEASED, or an ASK sent it on.
func (n *Node) ImportDown(slot int) bool {
	st := n.ho.state(slot)
	return st != nil && st.mode == ModeImporting && (st.waited || len(st.past) > 0 || st.refused.Load())
}

// ImportRefused notes that st's old owner answered HANDEDOFF to a request
// for one of its slots that this node sent it while importing in st.
func (n *Node) ImportRefused(st *SlotState) {
	if st != nil && st.mode == ModeImporting {
		st.refused.Store(true)
	}
}
