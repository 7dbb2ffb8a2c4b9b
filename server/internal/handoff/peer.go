package handoff

import (
	"context"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// peerImport is RL.PEER IMPORT from reset|add|replace|pull|handback slots payload: keys of slots
// moving here from node from. reset first drops what this node has for the
// slots (an earlier copy, which the new one replaces whole). It changes no
// slot's state: this node goes on sending the slots' requests to from,
// until peerDone.
//
// A slot this node serves as its own (see servedSlots) is not replaced: from
// took it only while it did not see this node for a moment (a membership
// flap), and hands it back from its copies, older than this node's keys or
// missing some. This node keeps every key it has and takes only the ones it lacks.
//
// The keys of a PULL's answer or a handback (modes pull and handback: a
// backup's copies, or keys a node kept for this one, see kept.go) are
// joined with this node's, key by key (shard.Map.ImportJoin), whether it
// serves their slots or imports them. Such keys may be older or newer
// than this node's: after a heal, two nodes that each took a slot over
// while the other was cut off may both push it back, in either order, and
// the older push replaced the newer (the simulation's cold seed 1418: n4
// pushed slot 15420 at 130, then n0 at 121, and the key admitted 157
// against a bound of 156). A join never lowers a count.
func (n *Node) peerImport(x *core.Session, args [][]byte) {
	slots, ok := parseSlots(string(args[4]))
	if len(args) != 6 || !ok {
		x.Out.WriteError(errSyntax)
		return
	}
	from, reset := string(args[2]), core.EqualFold(args[3], "reset")
	// pull and handback are taken alike (see kept.go for who sends which)
	pull := core.EqualFold(args[3], "pull") || core.EqualFold(args[3], "handback")
	n.View() // take the membership's newest view first: a joiner marks what it imports
	if pull && n.pullNotNeeded(from, slots) {
		x.Out.WriteError(errNotImporting)
		return
	}
	if pull && n.keepsOwnUnserved(slots) {
		x.Out.WriteError(errKeepsOwn) // see kept.go
		return
	}
	if pull && n.lostElsewhere(from, slots) {
		x.Out.WriteError(errLostElsewhere) // see holder.go
		return
	}
	if pull || reset || core.EqualFold(args[3], "replace") {
		n.notePulled(from, slots, pull)
	}
	own, others := n.servedSlots(slots)
	if core.EqualFold(args[3], "replace") { // see resume.go
		others = append(others, n.importAgain(from, own)...)
		own, reset = &replica.SlotBits{}, true
	}
	if reset {
		n.dropSlots(replica.SlotSet(others))
		n.importingFrom(from, slots)
		if len(others) < len(slots) {
			n.log.Warn("cluster: a node hands over slots this node never stopped serving (a membership flap); keeping this node's keys, adding only the ones it lacks",
				"from", from, "slots", len(slots)-len(others))
		}
	}
	if pull {
		n.notePushed(from, slots)
	}
	keys, err := n.importHanded(args[5], own, pull)
	n.ho.copied(from, reset, keys, len(args[5]))
	if err != nil {
		n.log.Warn("cluster: a handed-over key could not be stored", "from", from, "err", err)
		x.Out.WriteError("ERR import: " + err.Error())
		return
	}
	x.Out.WriteString("OK")
}

// servedSlots splits slots into those this node serves as their owner, and
// has served as such since it first counted what it served: its table
// names it, no handoff is moving them, it has not lost them (lost.go), and
// it is not a joiner that has yet to see the cluster; and the others.
func (n *Node) servedSlots(slots []int) (*replica.SlotBits, []int) {
	n.switchMu.Lock() // counts is the hook's
	defer n.switchMu.Unlock()
	return n.servedSlotsLocked(slots)
}

// servedSlotsLocked is servedSlots for a caller that holds switchMu.
func (n *Node) servedSlotsLocked(slots []int) (*replica.SlotBits, []int) {
	v := n.cur.Load()
	var own replica.SlotBits
	var others []int
	tk := n.takeover.Load()
	for _, slot := range slots {
		if st := n.ho.state(slot); n.ho.counts && v.Table.Owner(slot).Name == v.Self && (st == nil || st.keep) && !tk.Lost(slot) {
			own[slot/64] |= 1 << (slot % 64)
		} else {
			others = append(others, slot)
		}
	}
	return &own, others
}

// importHanded stores a handoff's entries: each replaces its key's state,
// but in a slot of own, where it only fills a key this node lacks; with
// join, each is joined with its key's state (see peerImport).
func (n *Node) importHanded(payload []byte, own *replica.SlotBits, join bool) (int, error) {
	m, now := n.store, time.Now().UnixNano()
	return persistence.DecodeEntries(payload, func(e *shard.Entry) error {
		switch {
		case join:
			_, err := m.ImportJoin(*e, now)
			return err
		case own.KeyIn(e.Key):
			_, err := m.ImportMissing(*e, now)
			return err
		}
		return m.Import(*e, now)
	})
}

// notePulled records whether node from sends copies of slots as a PULL's
// answer (IMPORT mode pull: copies a backup holds, or keys a node kept,
// see kept.go), or as a handoff (any other mode): the DONE that
// follows a PULL's answer skips the slots this node imports from another
// node (see takeSlots), and a handoff's ends them all, its IMPORT having
// made their imports come from from (importingFrom).
func (n *Node) notePulled(from string, slots []int, pull bool) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	b := n.ho.pulled[from]
	if b == nil && !pull {
		return
	}
	if b == nil {
		b = &replica.SlotBits{}
		if n.ho.pulled == nil {
			n.ho.pulled = map[string]*replica.SlotBits{}
		}
		n.ho.pulled[from] = b
	}
	for _, slot := range slots {
		if pull {
			b[slot/64] |= 1 << (slot % 64)
		} else {
			b[slot/64] &^= 1 << (slot % 64)
		}
	}
}

// importingFrom makes the slots this node imports come from node from,
// which has started sending them: when two nodes join at once, the old
// owner this node guessed (the owner without it) may not hold them; and a
// node that waits for its slots after it was declared dead (keep) gets
// them back from whichever node served them. Only a node that holds its
// lease starts a handoff (see migrate), so from served the slots.
func (n *Node) importingFrom(from string, slots []int) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	v := n.cur.Load()
	node, ok := v.Table.Node(from)
	if !ok {
		return
	}
	for _, slot := range slots {
		if st := n.ho.state(slot); st != nil && st.mode == ModeImporting && st.peer.Name != from {
			n.ho.set(slot, &SlotState{mode: ModeImporting, peer: node, until: st.until, keep: st.keep})
			n.ho.holdBy(slot, from)
		}
	}
	n.ho.notify()
}

// copied counts a copy's keys and bytes from node from: a reset starts
// the copy anew, and took counts the last one's.
func (h *handoff) copied(from string, reset bool, keys, bytes int) {
	h.inMu.Lock()
	defer h.inMu.Unlock()
	if h.in == nil {
		h.in = map[string][2]int{}
	}
	c := h.in[from]
	if reset {
		c = [2]int{}
	}
	h.in[from] = [2]int{c[0] + keys, c[1] + bytes}
	h.waits.copied(from) // a copy is under way: see stable.go
}

// took counts the slots, keys and bytes that node from handed over.
func (h *handoff) took(from string, slots int) {
	h.inMu.Lock()
	c := h.in[from]
	delete(h.in, from)
	h.inMu.Unlock()
	h.stats.slotsIn.Add(int64(slots))
	h.stats.keysIn.Add(int64(c[0]))
	h.stats.bytesIn.Add(int64(c[1]))
}

// peerDone is RL.PEER DONE from slots: from has sent the slots' last copy
// and cuts them once this node replies OK. This node serves them from now
// on: as their owner, or adopted ahead of its table when it still names
// from (a leave this node has not heard of yet). A slot its table gives a
// third node is refused whole, as is a DONE from a node this node's view
// does not have yet: from retries by its own table.
func (n *Node) peerDone(x *core.Session, args [][]byte) {
	slots, ok := parseSlots(string(args[3]))
	if len(args) != 4 || !ok {
		x.Out.WriteError(errSyntax)
		return
	}
	from := string(args[2])
	n.View() // take the membership's newest view first
	served, err := n.takeSlots(from, slots)
	if err != "" {
		x.Out.WriteError(err)
		return
	}
	if n.repl != nil {
		n.repl.ResyncBackups(served)
	}
	n.ho.took(from, len(slots))
	n.log.Info("cluster: took slots over", "from", from, "slots", len(slots))
	x.Out.WriteString("OK")
}

// takeSlots makes this node serve slots, which from hands over, and
// returns those it served already (see servedSlots), or the error reply.
func (n *Node) takeSlots(from string, slots []int) ([]int, string) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	// Which slots this node served already is read by the table it takes
	// them by: read before switchMu, a table switch in between could leave
	// a slot the new table gives from counted as served here, with no
	// adopted state to hand it on when the table moves again.
	own, _ := n.servedSlotsLocked(slots)
	v := n.cur.Load()
	if _, ok := v.Member(from); !ok {
		// A joiner whose view does not have from yet counts nothing it
		// serves: once its view catches up, its hook would import the slots
		// from from again, which has cut and sends nothing more. from
		// retries until this node sees it.
		return nil, "ERR node " + from + " is not in this node's view yet"
	}
	for _, slot := range slots {
		if owner := v.Table.Owner(slot).Name; owner != v.Self && owner != from {
			return nil, "ERR slot " + strconv.Itoa(slot) + " belongs to " + owner + " here"
		}
		// Only the node this one imports the slot from ends the import:
		// another node's DONE (a paused node's answer to an old PULL,
		// from a table of before its pause) would let this node serve the
		// slot while its old owner still does. An old owner that hands the
		// slot over starts with a reset IMPORT, which makes it the import's
		// old owner (importingFrom). A PULL's answer covers many slots, of
		// which a few may be imported from another node (tables that
		// differ for a moment): it skips those, and ends the others'
		// imports (before, one such slot refused the whole answer).
		if st := n.ho.state(slot); st != nil && st.mode == ModeImporting && st.peer.Name != from && !n.ho.pulled[from].Has(slot) {
			return nil, "ERR slot " + strconv.Itoa(slot) + " is imported from " + st.peer.Name + " here"
		}
		if n.ho.pulled[from].Has(slot) && n.lostElsewhereLocked(from, slot) {
			return nil, errLostElsewhere // see lostElsewhereLocked
		}
	}
	pulled := n.ho.pulled[from]
	delete(n.ho.pulled, from)
	if pulled != nil {
		taken := slots[:0:0]
		for _, slot := range slots {
			st := n.ho.state(slot)
			if st == nil && v.Table.Owner(slot).Name == from && n.ho.holder[slot] == from {
				continue // handed to from, which serves it: see handedNotAdopted
			}
			if st == nil || st.mode != ModeImporting || st.peer.Name == from {
				taken = append(taken, slot)
			}
		}
		if skipped := len(slots) - len(taken); skipped > 0 {
			n.log.Info("cluster: a PULL's answer skipped slots this node imports from another node, or handed to the sender; their imports wait for it",
				"from", from, "slots", skipped)
		}
		slots = taken
	}
	n.ho.noteHanded(from, slots)
	n.unloseLocked(from, slots, pulled)
	for _, slot := range slots {
		if !n.takeover.Load().Lost(slot) {
			n.ho.holdBy(slot, "") // served here: a lost one waits for its holder
		}
	}
	for _, slot := range slots {
		n.ho.got[slot/64] &^= 1 << (slot % 64)
	}
	var served []int
	adopted := &SlotState{mode: ModeAdopted, peer: cluster.Node{Name: from}}
	for _, slot := range slots {
		switch {
		case own.Has(slot):
			served = append(served, slot)
			if st := n.ho.state(slot); st != nil && st.keep {
				n.ho.set(slot, nil) // handed back after a rejoin: see rejoin
			}
		case v.Table.Owner(slot).Name == v.Self:
			n.ho.set(slot, nil)
		default:
			n.ho.set(slot, adopted)
		}
	}
	n.ho.notify()
	return served, ""
}

// handedNotAdopted: a DONE that ends a PULL's answer (or kept keys)
// adopted every slot it named that this node neither imported nor owned
// by its table, as a handoff's DONE does. A PULL's answer can be older
// than a handoff the other way: the simulation's cold seed 3704 at a 1 s
// import wait, n1 pulled twice; n4's first answer's DONE ended n1's guess
// import of slot 14392, n1's table then gave the slot to n4 and n1 handed
// it over, and n4's second answer's DONE, sent before n4 took that
// handoff, made n1 adopt the slot n4 served. 6.4 s later n2's death gave
// the slot to n1 by its table, and n1 served it at once while n4 did too.
// So such a DONE leaves alone a slot that this node handed to the sender
// (its holder record), holds in no handoff state, and whose owner by its
// table is the sender: the sender serves it. The keys the IMPORT brought
// stay joined in the store, as any kept keys' are.

// HandOff hands every slot this node holds to the node that owns it
// without this one, for a graceful leave: it copies each batch's keys,
// gates it, sends the last copy and cuts it (see migration), and waits for
// every migration under way, or ctx's end. From its start, requests for
// the slots are forwarded to their new owners once cut; the caller then
// tells the members that the node leaves.
func (n *Node) HandOff(ctx context.Context) error {
	v := n.View()
	n.switchMu.Lock()
	n.ho.leaving.Store(true)
	outs := map[string][]int{}
	for slot := range cluster.Slots {
		st := n.ho.state(slot)
		mine := v.Table.Owner(slot).Name == v.Self && st == nil
		if heir := n.ho.heir(v, slot); heir.Name != v.Self && (mine || st != nil && st.Mode() == ModeAdopted) {
			outs[heir.Name] = append(outs[heir.Name], slot)
		}
	}
	for name, slots := range outs {
		to, _ := v.Table.Node(name)
		n.startMigration(to, slots, v.Table)
	}
	n.switchMu.Unlock()
	done := make(chan struct{})
	go func() {
		n.moves.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
