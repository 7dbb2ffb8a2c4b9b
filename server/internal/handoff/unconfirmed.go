package handoff

import "github.com/rlstore/rlstore/cluster"

// rejoinUnconfirmed runs when the lease proves that no majority confirmed
// any death of this node's it acknowledged at its rejoins
// (cluster.Lease.OnUnconfirmed): nobody took its slots over, so its own
// keys are their state. The slots a rejoin made wait for a handback keeping
// those keys (keep), and those of them lost meanwhile because the node they
// waited for died too (TestRedPausedAtHeal: n0, declared dead only by the
// minority, waited for n2, its slots' runner-up, which was paused and whose
// death was then confirmed), are served from them at once, once the lease
// serves. A slot imported from a node it was handed to is not: its keys
// here are not the slot's state (rejoinImportLocked). The held copies the
// rejoin forgot stay forgotten (a full sync brings them again). See
// docs/cluster.md, "Safety".
func (n *Node) rejoinUnconfirmed() {
	n.switchMu.Lock()
	v := n.cur.Load()
	tk := n.takeover.Load()
	var served []int
	for slot := range cluster.Slots {
		if v.Table.Owner(slot).Name != v.Self || tk.Lost(slot) {
			continue // a lost one waits for its holder: see rejoinLost
		}
		if st := n.ho.state(slot); st != nil && st.mode == ModeImporting && st.keep && n.ho.swap(slot, st, nil) {
			served = append(served, slot)
		}
	}
	var bits [cluster.Slots / 64]uint64
	back := 0
	for slot := range cluster.Slots {
		if !tk.Lost(slot) {
			continue
		}
		if n.ho.ownLost.Has(slot) && v.Table.Owner(slot).Name == v.Self && n.ho.state(slot) == nil {
			n.ho.lostFrom[slot/64] &^= 1 << (slot % 64)
			served = append(served, slot)
			back++
			continue
		}
		bits[slot/64] |= 1 << (slot % 64)
	}
	if back > 0 {
		n.takeover.Store(tk.WithLost(&bits))
	}
	for i := range n.ho.ownLost {
		n.ho.ownLost[i] &= n.ho.forgone[i] // a forgone slot's mark stays: see backKeeps
		n.ho.keptLost[i] &= n.ho.ownLost[i]
	}
	n.ho.setHolder("", served)
	n.switchMu.Unlock()
	if len(served) > 0 {
		n.ho.notify()
		n.log.Warn("cluster: no majority confirmed this node's death; serving the slots it waited for from its own keys",
			"slots", len(served), "lost", back)
	}
}
