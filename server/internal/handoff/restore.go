package handoff

import (
	"errors"
	"slices"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// A node restarted sooner than failure detection notices (kill -9, then a
// supervisor's quick restart) is still its slots' owner in every other
// node's table: nothing moves there, so no one hands the slots over and no
// backup promotes its copies. The new process has its data dir's state,
// or none. As a joiner it marks every slot it owns as importing from the
// owner the slot would have without it, which is the slot's backup, the
// node that holds its copies. At every table change it asks every other
// member for the slots it still imports, with RL.PEER PULL: its first view
// may lack some members, whose slots it then expects from another. A node
// that owns such a slot, is handing it to the joiner, or does not back it
// up, ignores the request: a handoff brings the slot. A node that backs
// the slot up for the joiner sends its copies (RL.PEER
// IMPORT pull, which adds: a copy replaces the joiner's key, and the joiner
// keeps the keys no copy has), then RL.PEER DONE, and the joiner serves the
// slot. Until then the joiner's requests for it wait, as for any import,
// and its first full sync to its backups, which would drop their copies,
// waits for its imports (see shipPeer.shipOnce).
//
// Every joiner asks, restarted or not, and so does a node that rejoins
// (see rejoin); an import a table change starts waits for its old owner's
// handoff instead (see handoffHook). On a fresh join the PULL sent at
// one table change often reaches the old owner just after its handoff
// brought the slots: a joiner that imports none of them any more, and was
// handed them all by the sender, refuses the copies (errNotImporting).

// pullImports asks every other member of v for slots, which this node
// imports.
func (n *Node) pullImports(v *cluster.View, slots []int) {
	if len(slots) == 0 {
		return
	}
	spec := []byte(formatSlots(slots))
	for _, to := range v.Table.Nodes() {
		if to.Name == v.Self {
			continue
		}
		go func() {
			if err := n.peerCallAs(v.Self, to, cluster.PeerPull, "", spec, nil); err != nil {
				n.log.Debug("cluster: asking for imported slots failed; waiting for a handoff", "from", to.Name, "err", err)
			}
		}()
	}
}

// peerPull is RL.PEER PULL from slots: from, a joiner, imports slots from
// this node. It answers OK, and sends from the copies of those slots this
// node holds as their backup, then DONE; slots it owns or is moving it
// leaves to the handoff.
func (n *Node) peerPull(x *core.Session, args [][]byte) {
	slots, ok := parseSlots(string(args[3]))
	if !ok {
		x.Out.WriteError(errSyntax)
		return
	}
	to, backed := n.backedUpFor(string(args[2]), slots)
	x.Out.WriteString("OK")
	if len(backed) == 0 {
		return
	}
	var copies *shard.Map
	if n.repl != nil {
		copies = n.repl.Copies()
	}
	go n.sendCopies(copies, to, backed)
}

// sendCopies sends to the copies of slots, then DONE. The connection to a
// node that restarted can be the old process's, which fails at once and
// is dropped: a few more tries go on a new one.
func (n *Node) sendCopies(copies *shard.Map, to cluster.Node, slots []int) {
	var err error
	for try := range pullTries {
		if try > 0 {
			time.Sleep(pullRetry)
		}
		var keys int
		if keys, _, err = n.copyFrom(copies, to, slots, true, "pull"); err == nil {
			n.log.Info("cluster: sent a member that asked for them the copies of its slots", "to", to.Name, "slots", len(slots), "keys", keys)
			return
		}
		if !errors.Is(err, cluster.ErrUnreachable) {
			break
		}
	}
	if err.Error() == errNotImporting {
		// The usual end of a join: the PULL went out at a table change
		// while the handoff that brought the slots was under way.
		n.log.Debug("cluster: a member no longer imports the slots it asked for; a handoff brought them", "to", to.Name, "slots", len(slots))
		return
	}
	n.log.Warn("cluster: could not send a member the copies of its slots it asked for", "to", to.Name, "slots", len(slots), "err", err)
}

// pullTries and pullRetry bound sendCopies' tries.
const (
	pullTries = 4
	pullRetry = 100 * time.Millisecond
)

// errNotImporting is the answer to an RL.PEER IMPORT pull whose slots the
// node has already been handed by the sender (see pullNotNeeded).
const errNotImporting = "NOTIMPORTING none of these slots is imported here"

// pullNotNeeded reports whether copies of slots from node from, which a
// PULL asked for, are not needed: this node imports none of them any more,
// and from handed every one over to this process. A restarted process has
// been handed nothing yet, so it takes them, even once its imports have
// given up waiting: then they fill in the keys it lacks.
func (n *Node) pullNotNeeded(from string, slots []int) bool {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	handed := n.ho.handed[from]
	for _, slot := range slots {
		if st := n.ho.state(slot); (st != nil && st.mode == ModeImporting) || handed == nil || !handed.Has(slot) {
			return false
		}
	}
	return true
}

// noteHanded records that node from handed slots over to this process.
// The caller holds switchMu.
func (h *handoff) noteHanded(from string, slots []int) {
	if h.handed == nil {
		h.handed = map[string]*replica.SlotBits{}
	}
	b := h.handed[from]
	if b == nil {
		b = &replica.SlotBits{}
		h.handed[from] = b
	}
	for _, slot := range slots {
		b[slot/64] |= 1 << (slot % 64)
	}
}

// backedUpFor returns, of slots, those that node from owns and this node
// backs up, with no handoff moving them, and from's node; none while this
// node does not hold its lease. A slot this node holds none of from's
// copies of (from's full sync brought them: replica.HeldBy) counts only
// if this node knows of no other state of it: its table did not give it
// to from at its owner's death (deadPrev), and this node did not lose it
// (forgone). On a cluster's first formation no node holds copies, and a
// DONE without them lets the new owner serve the slot at once. A slot
// whose keys this node keeps for from (kept.go) is left to their push, as
// RELEASED leaves it: the simulation's seed 500, a DONE without copies
// went first, and the process served the slot from nothing.
//
// The simulation's cause A (seeds 32, 405, 930): a DONE without copies
// ended the import of a process that was the slot's owner only in a first
// table that lacked the member whose state it was. A restarted process
// whose first view came from a node that saw the slot's owner die, and
// whose backup (this process, before its crash) died too, owns the slot
// there without ever having seen that death, so the lost-slot rule never
// ran for it; this node's empty DONE let it serve the slot from nothing,
// while the dead owner, paused or cut off, still held its keys. Left
// unanswered, the import waits for a handoff, or asks RELEASED after
// importWait, which names the dead owner (see noteDeadPrev) or, for a
// slot lost here, leaves it lost. Without replicas no node holds copies,
// and the DONE says only that this node knows of no other state (the
// restarted process serves its data dir's keys, as before).
func (n *Node) backedUpFor(from string, slots []int) (cluster.Node, []int) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	v := n.cur.Load()
	n.seedKnownLocked(v)
	to, ok := v.Table.Node(from)
	if !ok || !n.serving() {
		// A node that may not serve (cut off, paused, or just back) knows
		// nothing newer than its table: a third node may have served the
		// slots meanwhile, and its copies would let from serve them too.
		return to, nil
	}
	var backed []int
	for _, slot := range slots {
		ru, ok := v.Table.RunnerUp(slot)
		if ok && ru.Name == v.Self && v.Table.Owner(slot).Name == from && n.ho.state(slot) == nil && !n.ho.returned[from].Has(slot) && !n.ho.kept.Has(slot) &&
			(n.repl == nil || n.repl.HeldBy(slot, from) || n.ho.deadPrev[slot] == "" && !n.ho.forgone.Has(slot) && !n.lostAtOwner(slot, from)) {
			backed = append(backed, slot)
		}
	}
	return to, backed
}

// lostAtOwner reports whether owner's last full sync here named slot
// lost there (replica.LostAt): its state is with the node it was lost
// from, not here, and a DONE without copies would let owner (a new
// process, say) serve it from nothing.
func (n *Node) lostAtOwner(slot int, owner string) bool {
	_, lost := n.lostHolder(slot, owner)
	return lost
}

// shardsOf is m.Shards(), and 0 for no map.
func shardsOf(m *shard.Map) int {
	if m == nil {
		return 0
	}
	return m.Shards()
}

// noteReturns records, for each member nv has and old did not (a join, or
// a return after a death), its slots that old gave to a third node: that
// node served them, and hands them back itself; copies this node sends
// for them would let the member serve them while that node still does
// (it may be cut off from the member, and hold its lease a moment
// longer). The caller holds switchMu.
func (h *handoff) noteReturns(old, nv *cluster.View) {
	if old == nil {
		return
	}
	for _, m := range nv.Table.Nodes() {
		if old.Table.Has(m.Name) || m.Name == nv.Self {
			continue
		}
		held := &replica.SlotBits{}
		for slot := range cluster.Slots {
			if nv.Table.Owner(slot).Name == m.Name {
				if prev := old.Table.Owner(slot).Name; prev != nv.Self && prev != m.Name {
					held[slot/64] |= 1 << (slot % 64)
				}
			}
		}
		if h.returned == nil {
			h.returned = map[string]*replica.SlotBits{}
		}
		h.returned[m.Name] = held
	}
}

// A restarted process whose first view came from a node that saw a slot's
// owner D die (confirmed) owns the slot in its first table without having
// seen that death, so the lost-slot rule (lost.go) never ran for it. If D's
// backup was this very process before its crash, the slot's state is with
// D alone (paused, or cut off), and its copies died with the crash. The
// process imports the slot from its runner-up, which holds none of the
// process's copies of it and so sends no DONE (backedUpFor); after
// importWait the import asks RL.PEER RELEASED, and a runner-up that
// released it would let the process serve it from nothing (the
// simulation's cause A, seed 32). So each node records, per slot its
// table gives another node because the slot's owner before died, that
// dead owner, and answers RELEASED for such a slot, when it holds none of
// the asker's copies of it, "ASK D": the asker, for which D is out of its
// table, treats the slot as one gained from a dead holder (askElsewhere),
// lost unless it holds D's copies, until D comes back (lost.go). Had the
// asker served the slot since D's death, its full sync made this node
// hold its copies, and the PULL's DONE ended the import before it asked.

// livePrev: a node whose own import of a slot (from a peer) had not ended
// when its table moved the slot on to another node does not learn
// whether that peer handed the slot over. So it records the peer as the
// slot's deadPrev too: it answers the new owner's PULL, unless it holds
// the new owner's copies, with no DONE, and its RELEASED with "ASK" the
// peer, which hands the slot over or, should it have died since, leaves
// the slot lost at the asker until it is back. Before, it answered the
// PULL with a DONE without copies, or released the slot: the
// simulation's seed 4934 of 2000..4999, n4's new process was importing
// slot 8224 from n1 (a guess) when the table moved it on to n3; n1 kept
// the keys for n3, n4, now the slot's backup, answered n3's rejoin PULL
// with a DONE without copies, and n3 served its 8 where n1 left 86.
//
// thirdPrev: the same holds for a slot the table moves between two other
// nodes, the old owner still in the table: this node never learns whether
// that owner handed the slot over, so it records the old owner too,
// unless it holds the slot's state itself (it hands the slot over, has
// adopted it, or keeps its keys: see holds), when it answers for it as
// ever. Before, it released the slot to the new owner's RELEASED: the
// simulation's seed 1985, n1, whose holder record named n3 (it had handed
// n3 the slot), released it to n3's new process after n2 had taken it
// over from its copies and served it to 87; now n1's table's move from n2
// to n3 names n2. An old owner whose copies this node does not hold is
// named only as askChain says. Nor does it name an old owner that answers
// the lease from a new process since (restartedSince).
//
// A restarted process's import of a slot from its guess (restore.go),
// moved on while its store holds the slot's keys from its data dir, names
// no one: those keys are what it served last, and it keeps them for the
// new owner (keepRestored). Naming the guess, which in
// TestRestartedFencerRemembers never held the slot and named the
// process back (its table moved the slot from the process to the paused
// member c), sent c's imports round an ASK circle to the end of the test.

// noteDeadPrev records deadPrev for the change from old to nv: a slot nv
// gives another node, whose owner in old nv says died, gets that owner;
// so does one this node was importing and lost, the node it imported it
// from (livePrev), and one moved between two other nodes, its old owner
// (thirdPrev); any other change of a slot's owner clears it. The caller
// holds switchMu.
//
// A death counts only from the Gone of the view in which the member left
// the table, and the membership hands each Gone to one view only
// (cluster.Membership.rebuild): this relies on every view reaching the
// hooks, which holds while OnChange runs SwitchTo on the rebuild loop's
// goroutine before the next rebuild. noteDeaths (died) relies on the same.
func (h *handoff) noteDeadPrev(old, nv *cluster.View, incOf func(string) uint64, held func(int, string) bool) {
	if old == nil {
		incs := map[string]uint64{}
		for _, m := range nv.Table.Nodes() {
			incs[m.Name] = incOf(m.Name)
		}
		for slot := range cluster.Slots {
			h.ownerInc[slot] = incs[nv.Table.Owner(slot).Name]
		}
		return
	}
	dead := map[string]bool{}
	for _, m := range nv.Gone {
		if m.State == cluster.StateDead && !nv.Table.Has(m.Name) {
			dead[m.Name] = true
		}
	}
	incs := map[string]uint64{}
	for slot := range cluster.Slots {
		owner, prev := nv.Table.Owner(slot).Name, old.Table.Owner(slot).Name
		if owner == prev {
			continue
		}
		if _, ok := incs[owner]; !ok {
			incs[owner] = incOf(owner)
		}
		inc := h.ownerInc[slot]
		dp, dpThird := h.deadPrev[slot], h.guessPrev.Has(slot) || h.servedPrev.Has(slot) // a thirdPrev mark
		h.ownerInc[slot], h.deadPrevInc[slot] = incs[owner], 0
		h.guessPrev[slot/64] &^= 1 << (slot % 64)
		h.servedPrev[slot/64] &^= 1 << (slot % 64)
		h.relay.marked[slot/64] &^= 1 << (slot % 64)
		switch {
		case dead[prev] && owner != nv.Self:
			h.deadPrev[slot], h.deadPrevInc[slot] = prev, incOf(prev) // its last process: see deadRestart
		case prev == nv.Self && h.importing(slot) && h.deadPrev[slot] != "" && h.deadPrev[slot] != owner:
			// It never came here: what this node knew of its state stands
			// (a seeded dead owner, see seedDeadPrev), unless its owner is
			// that member, back.
		case prev == nv.Self && h.importing(slot) && h.state(slot).peer.Name != owner:
			h.deadPrev[slot] = h.state(slot).peer.Name // it never came here: see livePrev
			if h.state(slot).guess {
				h.relay.note(slot, h.deadPrev[slot], owner) // a guess may never have held it: see relayGuess
			}
		case prev != nv.Self && owner != nv.Self && nv.Table.Has(prev) && !h.holds(slot):
			h.deadPrev[slot], h.deadPrevInc[slot] = prev, inc // a live third node held it: see thirdPrev
			if !held(slot, prev) {
				h.guessPrev[slot/64] |= 1 << (slot % 64) // or may have: see askChain
			} else {
				h.servedPrev[slot/64] |= 1 << (slot % 64) // it served it: see importServer
			}
		case owner == nv.Self && nv.Table.Has(prev) && dp != "" && !dpThird && !nv.Table.Has(dp) && !held(slot, prev):
			// prev got it at dp's death, and may never have held its
			// state: see takenPrev
		default:
			h.deadPrev[slot] = ""
		}
	}
}

// deadRestart: a dead owner that deadPrev names is not named once it
// answers the lease from another process than the one this node's lease
// last heard from before its death (restartedSince): the process that
// held the slot's state is gone, its state in the new one's data dir
// (keepRestored) or gone with it. Named, it took the import of the node
// its death gave the slot to: the simulation's seed 2681 at a 1 s import
// wait, n3 took 11822 over at n1's death (a crash) and served it to 94;
// n3's rejoin asked n0, which answered "ASK n1", n1's new process by
// then; the next table gave n1 the slot, n3, whose holder record named
// n1, kept nothing for it and released it, and n1 served it from 0.

// takenPrev: a slot this node's table moves to it from a live node that
// got it at its old owner's death (deadPrev: that owner, still out of the
// table), whose copies of it this node does not hold, keeps the dead
// owner as its deadPrev while this node imports it. This node does not
// know that the live node took the slot over: its own table may have
// given the slot elsewhere at the death, its copies dropped. Should the
// next table give the slot back to that node before the import ends (it
// never came: livePrev keeps the mark), this node answers its RELEASED
// with "ASK" the dead owner, and the asker has the slot lost until the
// owner is back, rather than serving it from nothing. Before, the mark
// was cleared, and this node released it: the simulation's seed 2108 at
// a 1 s import wait, n0's table moved 15677 from n1 (paused with 45) to
// n4 and then to n0, while n4's, which saw n1's and n3's deaths at once,
// moved it from n1 to n0 (n4 dropped n1's copies, 42, no longer its
// backup); the next table gave it to n4, which imported it from n0, and
// n0 released it: n4 served it from 0.

// unnameGuesses clears the deadPrev mark that livePrev gave each slot of
// guesses (a new process's imports the table moved on, each from its
// guess) whose keys this node keeps (keepRestored): see thirdPrev. The
// caller holds switchMu.
func (h *handoff) unnameGuesses(guesses map[int]string) {
	for slot, g := range guesses {
		if h.kept.Has(slot) && h.deadPrev[slot] == g {
			h.deadPrev[slot] = "" // it holds the keys it served last
		}
	}
}

// askChain: an old owner whose copies this node holds served the slot.
// One whose copies it does not hold may still have held the slot's
// state: the simulation's seed 1304, n0's table moved slot 14392 from n3,
// itself importing it from n4 (paused with the slot's keys, 61), to n1's
// new process, whose import guessed n0; n0 released it, and n1 served it
// from 0. So such an owner is named too (guessPrev), and n3, asked, points
// on to n4 or has the slot lost from it. But the old owner of a table of
// a moment may never have held the slot: on a cold start (nodes started
// at once) a and b each hold a two-node table with c for a moment, each
// names the other as the old owner of the slots that move to c, and
// naming them so unconditionally (f036ac8, reverted) sent c's imports a ->
// b -> a to the end (CI's TestSplitTwoOfFour; TestColdStartAtOnce). So
// the question names the nodes whose ASKs sent the import on (RL.PEER
// RELEASED's PAST), and this node names no such owner among them: it
// answers as if it named no one, as before this rule, and releases the
// slot where nothing else holds it here. Each node of the circle said it
// does not hold the slot; a node that held it answers for it itself
// (holds) or names the node it handed it to (its holder record), which
// PAST does not change. An asker that predates PAST asks without it, and
// is named no such owner: a cluster of mixed versions keeps 1304's gap
// until every node runs this one. Nor is a rejoin's question (KEEP): its
// keys are the slot's state, joined with a handback's, and the node
// that took the slot over at its death hands it back by itself (a
// migration, or kept keys). Named to rejoins too, a rejoin's import sent
// on by a guess dropped its keep when the table gave the slot to the
// node named, which imported it from the rejoin and was released it: the
// simulation's seeds 113, 1868 and 1895 at a 1 s import wait (n4 served
// 14392 from 0 where n1 had left 55, in 113).

// unnamed reports whether dead, slot's deadPrev, is an old owner this
// node holds no copies of (guessPrev) that it names not to q's asker:
// one that predates PAST, a rejoin (KEEP), or one whose import dead sent
// on already (askChain).
func (h *handoff) unnamed(slot int, dead string, q releasedQ) bool {
	return h.guessPrev.Has(slot) && (!q.chain || q.keep || slices.Contains(q.past, dead))
}

// holds reports whether this node holds slot's state by a handoff of its
// own: it hands the slot over (copying or gated), has adopted it, or
// keeps its keys for the slot's owner (kept.go).
func (h *handoff) holds(slot int) bool {
	if h.kept.Has(slot) {
		return true
	}
	st := h.state(slot)
	if st == nil {
		return false
	}
	m := st.Mode()
	return m == ModeCopying || m == ModeGated || m == ModeAdopted
}

// importing reports whether this node imports slot.
func (h *handoff) importing(slot int) bool {
	st := h.state(slot)
	return st != nil && st.mode == ModeImporting
}

// A new process has seen no death: its first table is dealt over the
// members memberlist shows it alive, and its memory of the cluster starts
// there. A slot whose owner died before, with its state (paused, or cut
// off, its backup dead too), is then one this process knows nothing of:
// as the slot's backup by its table it answered a later owner's PULL with
// a DONE without copies, and that owner served the slot from nothing (the
// simulation's seed 1508: n4's new process, whose first table lacked the
// paused n2, imported n2's slot as its own, and the slot then moved to
// n3's new process, which pulled it from n4). So each process records, for
// every member of the known set (which a data dir remembers, and every
// member sends) that it never had in a table, the slots that member owns
// in the table of every known member as deadPrev, as if it had seen that
// member die: it answers no PULL for them without the asker's copies, and
// answers RELEASED with "ASK" that member (noteDeadPrev). A slot that
// moves on while this node imports it keeps its mark. The member's
// return, which moves its slots to it, clears them.
//
// Such a member counts as one whose death this process saw confirmed
// (died, resume.go): a slot of its that this process serves came here by
// a handoff or a handback of a node that did see it, so what this
// process hands it back, or keeps for it, replaces its older keys (mode
// replace, handback). Before, it went in mode reset or pull, and the
// member, back from a pause and waiting for its handback keeping its
// keys, kept them (the simulation's seed 2222, on a model that drew less
// randomness: n2's new process, whose join showed n4 dead, got n4's slot
// handed back by n0 at 62 and served it to 83; when the paused n4
// resumed, n2 sent it its kept keys in mode pull, and n4 kept its 50).

// The same goes for a member this process sees: a slot that member would
// own with every known member in the table, and that the process's table
// gives another node, may be with that member, which the process never
// saw hand it over (livePrev). Before, the process released it: the
// simulation's seed 3092, n0's new process, whose first table lacked n1,
// n2 and n3, imported slot 14392 from its guess n4 (paused, serving it to
// 33), which its next table aimed at n1's new process, the slot's backup
// there; n1 released the slot, and n0 served it from 0.

// seedDeadPrev records deadPrev for the known members this process never
// had in a table, once it shares a table with another member, and for the
// slots such a table moves away from a member it sees. The caller holds
// switchMu.
func (n *Node) seedDeadPrev(nv *cluster.View) {
	h := &n.ho
	if n.cfg.Known == nil || n.repl == nil || len(nv.Table.Nodes()) < 2 {
		return // alone, it knows of no member yet; without replicas no node holds copies
	}
	if h.seen == nil {
		h.seen, h.had = map[string]bool{}, map[string]bool{}
	}
	for _, m := range nv.Table.Nodes() {
		h.seen[m.Name], h.had[m.Name] = true, true
	}
	unseen := map[string]bool{}
	all := slices.Clone(nv.Table.Nodes())
	for _, name := range n.cfg.Known() {
		if !h.seen[name] {
			h.seen[name] = true
			unseen[name] = true
			all = append(all, cluster.Node{Name: name})
		}
	}
	if len(unseen) == 0 {
		return
	}
	full, err := cluster.NewTable(0, all)
	if err != nil {
		return
	}
	for slot := range cluster.Slots {
		switch d := full.Owner(slot).Name; {
		case unseen[d]:
			h.deadPrev[slot], h.deadPrevInc[slot] = d, 0
			h.guessPrev[slot/64] &^= 1 << (slot % 64)
			h.servedPrev[slot/64] &^= 1 << (slot % 64)
			h.relay.marked[slot/64] &^= 1 << (slot % 64)
		case d != nv.Self && d != nv.Table.Owner(slot).Name:
			h.deadPrev[slot], h.deadPrevInc[slot] = d, 0 // a member it sees may hold it: see livePrev
			h.guessPrev[slot/64] &^= 1 << (slot % 64)
			h.servedPrev[slot/64] &^= 1 << (slot % 64)
			h.relay.marked[slot/64] &^= 1 << (slot % 64)
		}
	}
	if h.died == nil {
		h.died = map[string]absence{}
	}
	for name := range unseen {
		h.died[name] = absence{before: len(all), least: len(nv.Table.Nodes())}
	}
	n.log.Info("cluster: known members this process never saw; their slots' state is theirs until they come back",
		"members", len(unseen))
}

// A member can join the known set with no table change: another member's
// set names it (msgKnown) after the table change that the meeting made,
// a member dead there that this process never had in a table. Its marks
// are then due as if the table change had come after the merge, before
// this node answers for a slot: the simulation's cold seed 3548 (at a 1 s
// import wait, on the model that counted only the members met) had n1's
// table {n0, n1, n2, n4} give slot 14392 to n0 with n1 its backup, while
// n4, whose table kept the crashed n3 (declared dead, never confirmed),
// owned and served it; had n3 reached n1's known set just after that
// table, n1 would have answered n0's PULL with a DONE without copies, and
// n0 served the slot from 0 beside n4.

// seedKnownLocked records seedDeadPrev's marks for the known members that
// joined the set since the last table change, over v, the current view.
// The caller holds switchMu.
func (n *Node) seedKnownLocked(v *cluster.View) {
	if v != nil {
		n.seedDeadPrev(v)
	}
}

// A new process vouches only for what it saw. Its seeded marks name the
// slots a member it never saw would own with every known member in the
// table, but such a member may hold any slot: one it took over at its
// owner's death and served, say, before it was paused or cut off. So
// while a known member has not been in any of its tables, a process
// releases to RL.PEER RELEASED only the slots it handed the asker itself
// (its holder record): for the others it answers that it does not know,
// and the importer waits on and asks again, as for a slot not released,
// until the member is back (it then hands the slot over, or, in the
// process's table, makes the answer the usual one), or an operator's
// RL.CLUSTER FORGET takes it out of the known set. The simulation's seeds
// 362 and 1276 at a 1 s import wait: n0 took over n3's slot 10023 at n3's
// death and served it to 82, then was paused; n3 and n4 restarted
// without seeing it, n3 imported the slot from its guess n4, and n4, whose
// seeded marks named only n3 (the slot's owner with every member), released
// it: n3 served it from 0. Nodes started at once see one another within
// their first tables, long before any import asks (TestColdStartAtOnce).

// neverSawLocked reports whether a known member has not been in any of
// this process's tables shared with another member; false without a
// known set or replicas (a dead owner's slot is then served from empty
// state). The caller holds switchMu.
func (n *Node) neverSawLocked() bool {
	if n.cfg.Known == nil || n.repl == nil {
		return false
	}
	for _, name := range n.cfg.Known() {
		if !n.ho.had[name] {
			return true
		}
	}
	return false
}

// deadPrevOfLocked returns the dead owner whose death gave slot to from
// in this node's table, when this node holds none of from's copies of the
// slot; "" otherwise, and without replicas (no node holds copies: a dead
// owner's slot is served from empty state). The caller holds switchMu.
func (n *Node) deadPrevOfLocked(slot int, from string) string {
	if n.repl == nil {
		return ""
	}
	dead := n.ho.deadPrev[slot]
	if dead == "" || dead == from || n.repl.HeldBy(slot, from) || n.restartedSince(slot, dead) {
		return ""
	}
	return dead
}

// restartedSince reports whether node, the live third node slot's deadPrev
// names (thirdPrev), answers the lease from another process than the one
// this node's table gave the slot to: that process's state of it is in
// the new one's data dir, which keeps it for the slot's owner and answers
// for it itself (keepRestored), or gone with it. Named, such a process
// names its import's guess, which may be this node (livePrev): in
// TestRestartedFencerRemembers, c's imports of the slots a restarted a had
// served went round a and b to the end of the test. So does a dead owner
// deadPrev names, from the process this node's lease last heard before
// the death (deadRestart). The caller holds switchMu.
func (n *Node) restartedSince(slot int, node string) bool {
	was := n.ho.deadPrevInc[slot]
	now := n.incarnationOf(node)
	return was != 0 && now != 0 && now != was
}

// heldBy reports whether this node holds owner's copies of slot
// (replica.Replicator.HeldBy): owner's full sync, which waits for its
// lease, named the slot. False without replicas.
func (n *Node) heldBy(slot int, owner string) bool {
	return n.repl != nil && n.repl.HeldBy(slot, owner)
}

// incarnationOf is node's process incarnation by the lease's answers (see
// cluster.Lease.IncarnationOf); 0 when unknown, and without a lease.
func (n *Node) incarnationOf(node string) uint64 {
	if n.lease == nil {
		return 0
	}
	return n.lease.IncarnationOf(node)
}

// importServer: a node that held a live third node's copies of a slot,
// when its table moved the slot between two other nodes, names that node
// (thirdPrev: it served the slot). When a later table gives this node the
// slot, the table's old owner may be a table of a moment's, which never
// held it; the node that served it holds its state. The simulation's
// cold seed 2426: n1, n2's backup with its copies (7), named n2 when a
// heal's table moved the slot to n3; the next table gave the slot to n1,
// which imported it from n3. n3 had only imported it from a guess, and
// its DONE ended n1's import: n1 served the slot from 0 while n2, paused,
// held 7. So such an import is from the node that served the slot, while
// the table has it and the old owner is alive (a dead old owner's slot is
// taken over as before); it hands the slot over, or its death makes the
// slot lost here. The simulation's simImportServer mirrors it.

// servedBy returns, per slot of servedPrev, the node its deadPrev names.
// The caller holds switchMu.
func (h *handoff) servedBy() map[int]string {
	var served map[int]string
	for slot := range cluster.Slots {
		if h.servedPrev.Has(slot) && h.deadPrev[slot] != "" {
			if served == nil {
				served = map[int]string{}
			}
			served[slot] = h.deadPrev[slot]
		}
	}
	return served
}

// importServer is the node this node imports slot from, instead of its
// table's old owner prev, at the table change to nv (see importServer
// above); "" for none. The caller holds switchMu.
func (h *handoff) importServer(nv *cluster.View, prev string, slot int) string {
	s := h.served[slot]
	if s == "" || s == nv.Self || s == prev || !nv.Table.Has(s) || !nv.Table.Has(prev) {
		return ""
	}
	return s
}
