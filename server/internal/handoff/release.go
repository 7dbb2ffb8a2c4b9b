package handoff

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// An import ends when its old owner says DONE, when the old owner leaves
// the view (left: at once; declared dead: after the takeover's wait, see
// noteTakeovers), or when the old owner says it has released the slots:
// never on a timer alone. A node that gave up waiting and served a slot
// "from what came" while its old owner still served it (stuck in a copy to
// a third node, or holding the slot by a table of its own for a moment at
// a partition's heal) served it twice, and from a fresh quota
// (TestImportWaitsForAnOwnerThatHolds; docs/cluster.md, "Safety").
//
// So an import that has waited importWait asks its old owner, with
// RL.PEER RELEASED from slots, which of the slots it has released to this
// node: those whose owner its own table says is this node and that it is
// not handing over now, nor lost (lost.go). Those are served
// here from what came (the importer's keys, or a restarted node's data
// dir); for the others, and when the old owner does not answer, the
// import waits on and asks again every releaseRetry. A node that predates the question answers NOPERM,
// and its slots are served from what came, as before.

// releaseRetry is how often an import that has waited importWait asks
// its old owner again.
const releaseRetry = time.Second

// releaseNone is RL.PEER RELEASED's answer when no slot is released.
const releaseNone = "NONE"

// expireImports asks the old owners of the imports that have waited
// importWait which of their slots they have released to this node.
func (n *Node) expireImports() {
	h := &n.ho
	now := time.Now()
	asks := map[*SlotState][]int{}
	// One question per old owner and kind of import: each import of a
	// join or a rejoin has a state of its own, and a question per slot
	// was thousands of RL.PEER RELEASED at once (and as many goroutines
	// each second, which under -race on a loaded host kept the imports
	// from ending).
	type kind struct {
		peer        string
		keep, guess bool
		past        string
	}
	ext := map[kind]*SlotState{}
	for slot := range h.slots {
		st := h.slots[slot].Load()
		if st == nil || st.mode != ModeImporting || !now.After(st.until) {
			continue
		}
		k := kind{st.peer.Name, st.keep, st.guess, strings.Join(st.past, " ")}
		next := ext[k]
		if next == nil {
			next = &SlotState{mode: ModeImporting, peer: st.peer, until: now.Add(releaseRetry), keep: st.keep, guess: st.guess, past: st.past, waited: true}
			ext[k] = next
		}
		if h.swap(slot, st, next) { // the next ask waits releaseRetry, whatever this one hears
			asks[next] = append(asks[next], slot)
		}
	}
	for st, slots := range asks {
		go n.askReleased(st, slots)
	}
	if len(asks) > 0 {
		time.AfterFunc(releaseRetry+time.Millisecond, n.expireImports)
		n.logStuck()
	}
}

// askReleased asks st.peer which of slots, imported from it in state st,
// it has released, and serves those from what came.
func (n *Node) askReleased(st *SlotState, slots []int) {
	h := &n.ho
	released, ask, err := n.released(st.peer, slots, st.keep, st.past, true)
	if err != nil {
		n.log.Debug("cluster: an import's old owner did not say whether it released the slots; waiting on",
			"from", st.peer.Name, "slots", len(slots), "err", err)
		return
	}
	got := 0
	var served []int
	for _, slot := range released {
		if h.swap(slot, st, nil) {
			got++
			served = append(served, slot)
		}
	}
	n.noteHolder("", served)
	for holder, slots := range ask {
		n.askElsewhere(st, holder, slots)
	}
	if got > 0 {
		h.notify()
		h.stats.importTimeouts.Add(int64(got))
		n.log.Warn("cluster: an import's old owner released slots without handing them over; serving them from what came",
			"from", st.peer.Name, "slots", got, "waited", importWait)
	}
	if got < len(slots) {
		n.log.Info("cluster: an import's old owner still holds slots; waiting for its handoff",
			"from", st.peer.Name, "slots", len(slots)-got)
	}
}

// released asks to for the slots of slots it has released to this node;
// keep says this node waits for them keeping its own keys (a rejoin's),
// and chain that it asks in the form with PAST, naming past, the nodes
// whose ASKs sent the import on (see askChain). It says, too, which
// slots to handed this process and whose store this process restored
// (HANDED, RESTORED: see handed.go).
func (n *Node) released(to cluster.Node, slots []int, keep bool, past []string, chain bool) ([]int, map[string][]int, error) {
	return n.releasedSaying(to, slots, keep, past, chain, n.claims(to.Name, slots))
}

// releasedSaying is released with claims, the words HANDED and RESTORED
// with theirs (see handed.go), after KEEP.
func (n *Node) releasedSaying(to cluster.Node, slots []int, keep bool, past []string, chain bool, claims [][]byte) ([]int, map[string][]int, error) {
	fw := n.cfg.Mover
	if fw == nil {
		fw = n.cfg.Forwarder
	}
	self := n.cur.Load().Self
	req := [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerReleased), []byte(self), []byte(formatSlots(slots))}
	if keep {
		req = append(req, []byte(cluster.ReleasedKeep))
	}
	req = append(req, claims...)
	if chain {
		req = append(req, []byte(cluster.ReleasedPast))
		for _, p := range past {
			req = append(req, []byte(p))
		}
	}
	reps, err := fw.Forward(context.Background(), to.Addr, [][][]byte{req})
	if err != nil {
		return nil, nil, err
	}
	rep := strings.TrimSpace(string(reps[0]))
	switch {
	case claims != nil && strings.HasPrefix(rep, "-"+errPeerAuth[:6]):
		return n.releasedSaying(to, slots, keep, past, chain, nil) // a node that predates HANDED and RESTORED: the question without them
	case chain && strings.HasPrefix(rep, "-"+errPeerAuth[:6]):
		return n.releasedSaying(to, slots, keep, nil, false, nil) // a node that predates PAST: the question without it
	case keep && strings.HasPrefix(rep, "-"+errPeerAuth[:6]):
		return n.releasedSaying(to, slots, false, nil, false, nil) // a node that predates KEEP: the question without it
	case strings.HasPrefix(rep, "-"+errPeerAuth[:6]):
		return slots, nil, nil // a node that predates the question: as before it, served from what came
	case strings.HasPrefix(rep, "-"):
		return nil, nil, errors.New(rep[1:])
	}
	out, ask, ok := parseReleased(strings.TrimPrefix(rep, "+"))
	if !ok {
		return nil, nil, errors.New("bad RL.PEER RELEASED answer: " + rep)
	}
	return out, ask, nil
}

// peerReleased is RL.PEER RELEASED from slots: the slots of slots that
// this node has released to from, which imports them: its table names
// from their owner, and it is not handing them over (a copy under way, or
// gated), and it holds its lease. It answers their ranges, or NONE.
func (n *Node) peerReleased(x *core.Session, args [][]byte) {
	slots, ok := parseSlots(string(args[3]))
	if !ok {
		x.Out.WriteError(errSyntax)
		return
	}
	n.View() // the membership's newer view, if any, with its hooks run
	if !n.serving() {
		// Without its lease this node does not know who serves the slots
		// now (a node cut off, paused, or just back): a third node may
		// have taken them over while its table still says otherwise.
		x.Out.WriteString(releaseNone)
		return
	}
	// One table, and the per-slot state its hooks left, decide every
	// slot: a table switch between the two could pair an old table's
	// owner with a newer table's holder, deadPrev or kept mark.
	q := askedBy(args[4:])
	n.switchMu.Lock()
	out, ask, kept, old := n.releasedLocked(string(args[2]), slots, q)
	n.switchMu.Unlock()
	if kept {
		n.pushKept()
	}
	if len(old) > 0 {
		n.handedPull(string(args[2]), old)
	}
	x.Out.WriteString(releasedAnswer(out, ask))
}

// releasedQ is the form of an RL.PEER RELEASED question, past its slots.
type releasedQ struct {
	keep     bool              // KEEP: see lostBack
	handed   *replica.SlotBits // HANDED's slots: see handed.go
	restored []uint64          // RESTORED's processes: see handed.go
	chain    bool              // PAST: the asker follows chains (see askChain)
	past     []string          // the nodes PAST names
}

// askedBy reads RL.PEER RELEASED's arguments after its slots: KEEP,
// HANDED and its slots, RESTORED and its processes, then PAST and the
// nodes it names, each optional (the router checked the words). A claim
// that does not parse claims nothing.
func askedBy(rest [][]byte) releasedQ {
	var q releasedQ
	if len(rest) > 0 && cluster.IsWord(rest[0], cluster.ReleasedKeep) {
		q.keep, rest = true, rest[1:]
	}
	if len(rest) > 1 && cluster.IsWord(rest[0], cluster.ReleasedHanded) {
		q.handed, rest = handedSlots(string(rest[1])), rest[2:]
	}
	if len(rest) > 1 && cluster.IsWord(rest[0], cluster.ReleasedRestored) {
		q.restored, rest = parseIncs(string(rest[1])), rest[2:]
	}
	if len(rest) > 0 {
		q.chain = true
		for _, p := range rest[1:] {
			q.past = append(q.past, string(p))
		}
	}
	return q
}

// releasedLocked decides peerReleased's slots by the routing view: those
// released to from, those to ask another node for, and whether any of
// them is kept here for from (kept.go), and those handed to an older
// process of from (handed.go); q is the question's form. The caller holds
// switchMu.
func (n *Node) releasedLocked(from string, slots []int, q releasedQ) (out []int, ask map[string][]int, kept bool, old []int) {
	v := n.cur.Load()
	n.seedKnownLocked(v)
	unsure := n.neverSawLocked()
	askAt := func(node string, slot int) {
		if ask == nil {
			ask = map[string][]int{}
		}
		ask[node] = append(ask[node], slot)
	}
	for _, slot := range slots {
		holder := n.ho.holder[slot]
		if holder != "" && holder != from && holder != v.Self {
			askAt(holder, slot) // handed on, or never held here: see holder.go
			continue
		}
		if holder == from && n.handedOldLocked(slot, from) && !q.sameProcess(slot, n.ho.handedTo[slot].inc) {
			old = append(old, slot) // not the process it went to: see handed.go
			continue
		}
		if v.Table.Owner(slot).Name != from || n.ho.forgone.Has(slot) && !(q.keep && holder == from) {
			continue // this node would not have from serve it, or lost it (see lost.go; lostBack)
		}
		if a, ok := n.ho.died[from]; ok && (a.rejoined || n.ho.keptLost.Has(slot)) && n.ho.forgone.Has(slot) && n.ho.ownLost.Has(slot) {
			n.backKeepLocked(slot, a)
			kept = true // its keys go to from: see backKeeps
			continue
		}
		if n.servesHereLocked(slot) {
			continue // served here until its cut, or adopted: see heldFirst
		}
		if n.ho.kept.Has(slot) {
			kept = true // its keys are on their way (kept.go): see keptFirst
			continue
		}
		if dead := n.deadPrevOfLocked(slot, from); dead != "" && !n.ho.unnamed(slot, dead, q) {
			askAt(dead, slot) // its state was the dead owner's: see noteDeadPrev
			continue
		}
		if lh, lost := n.lostHolder(slot, from); lost && lh != v.Self && lh != from {
			if lh != "" {
				askAt(lh, slot) // from lost it from lh: see replica.LostAt
			}
			continue
		}
		if ru, ok := v.Table.RunnerUp(slot); ok && n.repl != nil && holder != from && ru.Name != v.Self && ru.Name != from && !isMember(v, ru.Name) {
			askAt(ru.Name, slot) // neither handed it to from nor its backup: see askTheBackup
			continue
		}
		if unsure && holder != from {
			continue // a member this process never saw may hold it: see neverSawLocked
		}
		out = append(out, slot)
	}
	return out, ask, kept, old
}

// heldFirst: a slot whose keys this node holds and serves, as it hands it
// over (migrating, gated) or because a node handed it here ahead of this
// node's table (adopted), is not released, and the asker is named no other
// node for it: its state is here, and a DONE follows (or the table moves
// the slot on from here). Before, the names came first: a node whose table
// gave the slot to the asker because its old owner died named that dead
// owner (deadPrev), and the asker imported the slot from it, which
// released it: the simulation's cold seed 1181 at a 1 s import wait (on a
// model that also mirrored the server's got, which shifted the schedule),
// n1, resumed from a pause with a stale table, took n4's handoff of slot
// 14392 (140) as adopted; n4's table gave the slot back to n4, which
// imported it from n1; n1 answered "ASK n2", n2 released it, and n4
// served it from 0.

// keptFirst: a slot whose keys this node keeps for the asker (kept.go) is
// not released either, and the asker is named no other node for it: those
// keys are the newest this node knows of the slot, and they are on their
// way. Before, a node whose table gave the slot to the asker at its old
// owner's death named that dead owner (deadPrev) first: the simulation's
// seed 5765 at a 1 s import wait, n2 kept 62 of slot 4626 for n3, which
// refused them while it had no lease (errKeepsOwn); n2 answered n3's
// question "ASK n0", n0, which never held the keys since, released the
// slot, and n3 served it from 0. A later push is joined with what the
// owner holds (peerImport), so naming nobody loses nothing: the import
// waits for the push or for its own peer's answer.

// servesHereLocked reports whether this node holds slot's keys as a slot
// it hands over or adopted (heldFirst). The caller holds switchMu.
func (n *Node) servesHereLocked(slot int) bool {
	st := n.ho.state(slot)
	if st == nil {
		return false
	}
	m := st.Mode()
	return m == ModeCopying || m == ModeGated || m == ModeAdopted
}

// askTheBackup: a node asked RL.PEER RELEASED for a slot that it neither
// handed to the asker (its holder record) nor backs up by its table, whose
// backup there is a member declared dead and not yet confirmed (in the
// table, not among the view's members), answers "ASK" that backup rather
// than releasing the slot. The asker's first table, dealt over the members
// memberlist's join showed alive, lacks that member, which made this node
// its guess at the backup; and this node's table may be older than what
// happened to the slot: the simulation's seed 779, n0, cut off alone while
// the slot's owner n2 died and its backup n3 served the slot, saw n2 (a
// new process) again and still named it the owner, with n3 (paused)
// declared dead there; n2's first table lacked n3, and n0 released the
// slot: n2 served it from nothing. Asked so, the asker imports from the
// backup, or, the backup being out of its table, has the slot lost until
// it is back (askElsewhere). A backup alive here is the asker's too, and
// answers for its copies itself (backedUpFor, noteDeadPrev); a node
// without replicas releases the slot as before.

// lostBack: a node asked RL.PEER RELEASED KEEP for a slot it lost at the
// asker's confirmed death (it held none of the asker's copies, so it never
// served the slot: lost.go), and forgone since the asker came back and
// owns it again, releases it, where it answers any other question for a
// forgone slot that it still holds it. The slot's holder here is the
// asker (noteLost), and KEEP says the asker is the process that held the
// slot's keys, back from a pause or a cut (a rejoin), not a new process
// whose keys died with the old one, which asks without it; no node served
// the slot in between, or this node would not have lost it (unless this
// node served it itself before its own rejoin: see backKeeps). Without this,
// the resumed node waited for every such slot until an RL.CLUSTER FORGET
// (TestRedPausedAtHeal: the runner-ups of n2's slots had forgotten n2's
// copies at their own rejoins, each lost them at n2's confirmed death,
// and when n2 resumed each answered its RELEASED that it still held them:
// 10 of the 30 counting keys -CLUSTERDOWN to the end).

// backKeeps: lostBack assumes that this node lost the slot at the asker's
// death, never having served it. A rejoin's own slot lost while it waited
// keeping its keys (ownLost: its import's peer died, or an ASK named a
// dead holder), where this node saw the asker's death confirmed before
// its own rejoin (absence.rejoined), was served here: this node took it
// over at the asker's death, then was declared dead itself, and a third
// node, whose own rejoin had forgotten this node's copies, named the asker
// its dead old owner. Its keys are newer than the asker's, which stopped
// before that death. So it is not released to the asker's RELEASED KEEP:
// its keys are kept for the asker (kept.go), in mode handback, and the
// asker's import ends on their DONE. A death seen after the rejoin is the
// other order (the asker took this node's slot over at its death and
// served it, then died while this node waited for it): the asker's keys
// are newer, and the slot is released as before. The simulation's seeds
// 293, 953, 1928 and 3648 at an import wait of 1 s: n4 took n1's slot
// 13107 over at n1's death and served it to 50; rejoining, it was told to
// ASK n1, dead: lost; n1 resumed, the table gave it the slot back, and n4
// released it to n1's RELEASED KEEP: n1 served its 32. The caller holds
// switchMu.
func (n *Node) backKeepLocked(slot int, a absence) {
	n.ho.keep(slot)
	if a.replaces(n.lease) {
		n.ho.keptReplace[slot/64] |= 1 << (slot % 64)
	}
	n.ho.ownLost[slot/64] &^= 1 << (slot % 64)
	n.ho.keptLost[slot/64] &^= 1 << (slot % 64)
}

// keptLost: a slot whose keys this node kept for its owner in mode
// handback (its rejoin disowned the handoff to the owner, whose death it
// had seen confirmed and whose slot it had served since: kept.go), which
// the table gives back to it at the owner's next death and which is lost
// here (it holds none of the owner's copies: lost.go), is marked as a
// rejoin's own slot lost keeping its keys (ownLost), and backKeeps holds
// for it whether or not this node's last rejoin came after the owner's
// last death: its keys were never handed to the owner (a push that went
// clears the mark: sendKept), so they are newer than the owner's whichever
// death came last. Before, the mark was dropped with the kept one, and
// lostBack released the slot to the owner's RELEASED KEEP: the
// simulation's cold seed 47 at a 1 s import wait, n4 served 5654 to 78
// after n0's confirmed death, rejoined while handing it back to n0 at a
// heal, had it back (lost, holder n0) at n0's next death, and released it
// to n0's rejoin, which served its 51.

// lostHolder returns the holder of slot that owner's last full sync here
// named, and whether it named slot lost at owner (replica.LostAt): asked
// RELEASED by owner, a new process whose keys of the slot are older than
// its state, this node answers "ASK" that holder, and releases nothing
// when there is none.
func (n *Node) lostHolder(slot int, owner string) (string, bool) {
	if n.repl == nil {
		return "", false
	}
	return n.repl.LostAt(slot, owner)
}

// isMember reports whether v counts name among its alive or leaving
// members: a table member that is not is declared dead, pending its
// confirmation.
func isMember(v *cluster.View, name string) bool {
	_, ok := v.Member(name)
	return ok
}

// waitImportsFromDead makes the slots this node imports from a member nv
// says died wait as slots taken from a dead owner do (fromDeadLocked): the
// old owner served them until it was cut off, and its lease may hold a
// moment longer; and unless this node holds its copies of them, no member
// it sees has their state (a rejoin's or a restarted process's guess at
// the old owner that had taken the slot over and served it, say: the
// simulation's seeds 162 and 326), so they are lost, as a slot gained
// from a dead owner is. The caller holds switchMu, before the hook's
// slotChange clears their import.
func (n *Node) waitImportsFromDead(nv *cluster.View) {
	if n.lease == nil {
		return
	}
	dead := map[string]bool{}
	for _, m := range nv.Gone {
		if m.State == cluster.StateDead {
			dead[m.Name] = true
		}
	}
	if len(dead) == 0 {
		return
	}
	from := map[string][]int{}
	tk := n.takeover.Load()
	for slot := range cluster.Slots {
		if st := n.ho.state(slot); st != nil && st.mode == ModeImporting && dead[st.peer.Name] && nv.Table.Owner(slot).Name == nv.Self {
			from[st.peer.Name] = append(from[st.peer.Name], slot)
			if st.keep && !tk.Lost(slot) { // one lost already: see rejoinLost
				n.ho.ownLost[slot/64] |= 1 << (slot % 64) // its keys may be the state: see rejoinUnconfirmed
			}
		}
	}
	for peer, slots := range from {
		n.fromDeadLocked(slots, peer)
	}
}
