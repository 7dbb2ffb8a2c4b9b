package cluster

// NextLost returns the takeover after the view change from old to nv (see
// NextTakeover, which runs first) with its lost slots updated, and the
// slots that stopped being lost because nv gives them to another node,
// which this node never served and so hands nothing of. A slot that nv
// gives this node because old's owner died is lost unless this node holds
// its state: held(slot, owner) reports whether it holds the slot's copies
// from that owner (a full sync of the owner's brought them, and nothing
// dropped them since). A nil held means no node keeps copies (replicas
// off): nothing is lost, and such a slot is served from empty state. A
// lost slot stays lost while nv gives it to this node. It reports how
// many slots became lost.
func NextLost(t *Takeover, old, nv *View, held func(slot int, owner string) bool) (*Takeover, *[Slots / 64]uint64, int) {
	unlost := new([Slots / 64]uint64)
	if old == nil {
		return t, unlost, 0
	}
	dead := map[string]bool{}
	for _, m := range nv.Gone {
		if m.State == StateDead {
			dead[m.Name] = true
		}
	}
	var lost [Slots / 64]uint64
	fresh := 0
	for slot := range Slots {
		bit := uint64(1) << (slot % 64)
		prev := old.Table.Owner(slot).Name
		mine := nv.Table.Owner(slot).Name == nv.Self
		switch {
		case t.Lost(slot) && !mine:
			unlost[slot/64] |= bit
		case t.Lost(slot):
			lost[slot/64] |= bit
		case mine && dead[prev] && held != nil && !held(slot, prev):
			lost[slot/64] |= bit
			fresh++
		}
	}
	if fresh == 0 && t.LostSlots() == 0 {
		return t, unlost, 0
	}
	return t.WithLost(&lost), unlost, fresh
}
