package handoff

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// Bounds of the handoff.
const (
	// importWait is how long a new owner sends a slot's requests back to
	// its old owner, waiting for it to say done, before it asks the old
	// owner whether it released the slot (see release.go). A move
	// takes milliseconds per thousand keys.
	importWait = 5 * time.Second
	// migrateWait is how long an old owner retries a cut the new owner
	// refuses or does not answer before it lets the slot go as it is.
	migrateWait = 10 * time.Second
	// chunkBytes bounds one RL.PEER IMPORT's payload, well under
	// --max-request-bytes' default.
	chunkBytes = 256 << 10
)

// Migration is one batch of slots moving from this node to another,
// because of one table change or a leave. Every slot of it points to one
// SlotState holding it; its phase is the slots' mode.
//
// The cut, and why no key is served by two nodes or from a fresh quota:
//
//  1. Copy: this node (the old owner, O) sends the slots' keys to the new
//     owner N, while it goes on serving them. N stores them but serves
//     nothing of the slots: its requests for them come back to O.
//  2. Gate: the slots' mode becomes gated, so a request for them waits;
//     then the barrier waits for every run that read the mode before, so
//     no change to the slots' keys is under way.
//  3. Last copy: O sends the slots' keys again (N first drops what it got
//     for them), then "done". N takes the slots (its table names it, or
//     it adopts them ahead of its table) and replies OK: from then on N
//     serves them and O's copy is its state, complete.
//  4. Cut: the slots become moved on O, which sends their requests to N,
//     releases the waiting ones (they go to N too), and drops its copy.
//
// A request N sent back to O before N took the slots may reach O after
// the cut: O answers errHandedOff instead of running it on a stale copy,
// and N runs it itself, having taken the slots before O cut. So at every
// moment exactly one of O and N runs a slot's requests, and N's first run
// sees every change O made. If N refuses or does not answer the last copy,
// O opens the gate and serves on, and retries while N is the owner its
// table names, for migrateWait. A slot whose owner changes again before
// the cut goes to whoever owns it in O's table at the cut.
type Migration struct {
	to      cluster.Node
	slots   []int
	started time.Time
	first   string         // the mode of each copy's first IMPORT: reset, or replace (see resume.go)
	held    *cluster.Table // the table this node held the slots by, nil when unknown (see disownedBy)
	phase   atomic.Int32   // Mode: copying, gated, moved
	// disowned is set when this node learns it was declared dead (see
	// rejoin): another node may have served the slots since, so this one
	// hands nothing over.
	disowned atomic.Bool

	mu     sync.Mutex    // guards opened
	opened chan struct{} // closed when the current gate opens
}

// gate makes the slots wait, for the last copy.
func (mg *Migration) gate() {
	mg.mu.Lock()
	mg.opened = make(chan struct{})
	mg.phase.Store(int32(ModeGated))
	mg.mu.Unlock()
}

// open ends the gate with the slots in mode m.
func (mg *Migration) open(m Mode) {
	mg.mu.Lock()
	mg.phase.Store(int32(m))
	if mg.opened != nil {
		close(mg.opened)
		mg.opened = nil
	}
	mg.mu.Unlock()
}

// waitOpen waits at most d for the gate to open, and reports whether it did.
func (mg *Migration) waitOpen(d time.Duration) bool {
	mg.mu.Lock()
	ch := mg.opened
	mg.mu.Unlock()
	if ch == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// handoffHook sets every slot's handoff state for the new view: it starts
// migrations of the slots this node had and another now owns, and marks
// the slots it gains as importing from their old owner. It is the first
// table-change hook.
//
// What this node "had" is its previous table, except that a node started
// with seeds (Joins) counts nothing it served alone before it first saw
// another member: the cluster it joins has newer state for those slots, so
// it neither hands them out nor takes them for its own; it imports all its
// slots from the owner they have without it.
func (n *Node) handoffHook(old, nv *cluster.View) {
	h := &n.ho
	oldCounts := old != nil && h.counts
	if len(nv.Table.Nodes()) > 1 {
		h.shared = true
	}
	h.counts = !n.cfg.Joins || h.shared
	h.noteDeaths(old, nv)
	h.forgetBehindDead(nv) // before any holder is read: see kept.go
	h.noteReturns(old, nv)
	h.served = h.servedBy() // before noteDeadPrev clears them: see importServer
	h.noteDeadPrev(old, nv, n.incarnationOf, n.heldBy)
	n.seedDeadPrev(nv) // after noteDeadPrev, whose move from a new process's lone table would clear its marks
	n.noteTakeovers(old, nv)
	n.waitImportsFromDead(nv)
	n.noteLost(old, nv)
	outs, ins := map[string][]int{}, []int(nil)
	until := time.Now().Add(importWait)
	n.lostComeBackLocked(nv)
	var guessed replica.SlotBits // a new process's imports the table moves on: see keepRestored
	var guesses map[int]string   // ... and the guess each was from
	for slot := range cluster.Slots {
		if st := h.state(slot); st != nil && st.mode == ModeImporting && st.guess && h.heir(nv, slot).Name != nv.Self {
			guessed[slot/64] |= 1 << (slot % 64)
			if guesses == nil {
				guesses = map[int]string{}
			}
			guesses[slot] = st.peer.Name
		}
		had := oldCounts && old.Table.Owner(slot).Name == nv.Self
		if to, ok := n.slotChange(old, nv, slot, had, oldCounts, until); ok {
			outs[to] = append(outs[to], slot)
		}
		if st := h.state(slot); st != nil && st.mode == ModeImporting && (st.guess || st.keep) {
			// A restart's or a rejoin's import asks the slot's backups for
			// copies (RL.PEER PULL): a table change's, from an old owner
			// that holds the slot, waits for its handoff; a backup's
			// copies and DONE would serve it from what the backup last
			// had of a third node's (TestRedPausedAtHeal).
			ins = append(ins, slot)
		}
		if h.kept.Has(slot) && nv.Table.Owner(slot).Name == nv.Self {
			if h.keptReplace.Has(slot) && n.takeover.Load().Lost(slot) {
				h.ownLost[slot/64] |= 1 << (slot % 64) // its keys are newer than the dead owner's: see keptLost
				h.keptLost[slot/64] |= 1 << (slot % 64)
			}
			h.unkeep(slot)     // its own again: its import ends with what it keeps, or what comes
			h.keepImport(slot) // keeping its keys: see keptBack
		}
		h.backBehind(old, nv, slot)
	}
	var held *cluster.Table
	if old != nil {
		held = old.Table
	}
	for name, slots := range outs {
		to, _ := nv.Table.Node(name)
		n.startMigration(to, slots, held)
		if n.lease == nil {
			delete(h.died, name) // it has its slots back: see resume.go
		}
	}
	n.pullImports(nv, ins) // see restore.go
	n.relayGuesses(nv)     // see formation.go
	n.keepRestored(nv, &guessed)
	h.unnameGuesses(guesses) // after keepRestored: see thirdPrev
	if h.kept != (replica.SlotBits{}) {
		n.pushKept()
	}
	h.notify()
	if in, _ := h.moving(); in > 0 {
		time.AfterFunc(time.Until(until)+time.Millisecond, n.expireImports)
	}
	n.logChange(nv, outs) // see formation.go
}

// slotChange sets slot's state for the new view nv and returns the node
// it must now be migrated to, if any.
func (n *Node) slotChange(old, nv *cluster.View, slot int, had, oldCounts bool, until time.Time) (string, bool) {
	h := &n.ho
	owner := h.heir(nv, slot).Name
	st := h.state(slot)
	var mode Mode
	if st != nil {
		mode = st.Mode()
	}
	mine := owner == nv.Self
	switch {
	case mode == ModeCopying || mode == ModeGated:
		// The migration settles it at its cut, by the table then.
	case mine && mode == ModeAdopted:
		h.set(slot, nil) // the table has caught up
	case mine && mode == ModeImporting:
		if !nv.Table.Has(st.peer.Name) {
			h.set(slot, nil) // the old owner has gone: serve from what came
			if !n.takeover.Load().Lost(slot) {
				h.holdBy(slot, "") // a lost one keeps it: it comes back with it (lostComeBackLocked)
			}
		} else if ru, ok := nv.Table.RunnerUp(slot); ok && st.guess && ru.Name != st.peer.Name && ru.Name != nv.Self {
			// A joiner whose first view lacked the slot's backup guessed
			// another node, which sends nothing for it; the backup's DONE
			// must end the import (only the import's old owner ends it).
			h.set(slot, &SlotState{mode: ModeImporting, peer: ru, until: st.until, guess: true})
		}
	case mine && had:
		if !n.takeover.Load().Lost(slot) {
			h.holdBy(slot, "") // a lost one keeps its holder: see unloseLocked
		}
	case mine:
		st := n.importFrom(old, nv, slot, oldCounts, until)
		h.set(slot, st)
		switch {
		case st != nil && st.guess:
			// A guess (a joiner's first view, which may lack members) is
			// not knowledge of who holds the slot: recorded as the holder,
			// it outlived the import when the next view gave the slot to
			// the member the first view lacked, and made this node import
			// the slot from the guess at that member's death rather than
			// take it over from its copies (TestPausedOwnerAnswersNothingStale).
		case st != nil:
			h.holdBy(slot, st.peer.Name)
		case !n.takeover.Load().Lost(slot):
			h.holdBy(slot, "") // served here from now on (its old owner died or left)
		}
	case mode == ModeImporting:
		h.set(slot, nil) // another node owns it now
		// Keys a push brought (got) are the slot's state, as a rejoin's
		// are, unless it handed the slot on (holder): then they are not.
		if st.keep && h.holder[slot] == "" || h.got.Has(slot) || h.behindTo(slot, st, owner) {
			h.got[slot/64] &^= 1 << (slot % 64)
			h.unkeep(slot)
			h.keep(slot) // this node's keys are the slot's state, joined with a handback's: see kept.go
			h.keepBehind(slot, st, nv)
			if a, ok := h.died[owner]; ok && a.replaces(n.lease) {
				// This node saw the new owner's death confirmed: its keys
				// are newer than the owner's, which served nothing after
				// its lease ran out, and go in mode handback, as a
				// migration to it would (startMigration). The simulation's
				// seed 885: n2 served n0's slots after n0's confirmed
				// death, waited for their handback after its own rejoin,
				// and sent them on as kept keys in mode pull when n0 came
				// back: n0 kept its older keys and served from them.
				h.keptReplace[slot/64] |= 1 << (slot % 64)
			}
		}
	case mode == ModeMoved && nv.Table.Owner(slot).Name != nv.Self:
		h.set(slot, nil) // the table routes it: see cut
	case mode == ModeMoved:
	case mode == ModeAdopted && owner == st.peer.Name:
		// Handed here by a node that leaves, which the table still names.
	case had && h.unlost.Has(slot):
		// Lost here, so never served here: nothing to hand over.
	case had || mode == ModeAdopted:
		return owner, true
	}
	return "", false
}

// importFrom is the state of a slot this node gains: importing from its
// old owner, or nil when that has gone (it died, or left without handing
// the slot over): then the slot is served from empty state, at once.
func (n *Node) importFrom(old, nv *cluster.View, slot int, oldCounts bool, until time.Time) *SlotState {
	var src cluster.Node
	switch ru, ok := nv.Table.RunnerUp(slot); {
	case n.takeover.Load().Lost(slot):
		return nil // it waits for its holder (lost.go)
	case oldCounts && n.takesOverFromCopies(old, nv, slot):
		return nil // see takesOverFromCopies
	case n.ho.holder[slot] != "" && n.ho.holder[slot] != nv.Self:
		// This node handed the slot to, or imported it from, another node
		// than the table's old owner: that node holds it (holder.go).
		holder := n.ho.holder[slot]
		if node, ok := nv.Table.Node(holder); ok {
			return &SlotState{mode: ModeImporting, peer: node, until: until}
		}
		if diedIn(nv, holder) {
			n.fromDeadLocked([]int{slot}, holder)
			return nil
		}
		if oldCounts {
			src = old.Table.Owner(slot)
		} else if ok {
			src = ru
		} else {
			return nil
		}
	case oldCounts:
		src = old.Table.Owner(slot)
		if server := n.ho.importServer(nv, src.Name, slot); server != "" {
			src, _ = nv.Table.Node(server) // see importServer
		}
	case ok:
		src = ru // the owner the slot had before this node joined
	default:
		return nil
	}
	if src.Name == nv.Self || !nv.Table.Has(src.Name) {
		return nil
	}
	return &SlotState{mode: ModeImporting, peer: src, until: until, guess: !oldCounts}
}

// heir is the node that should hold slot in view v: its owner, or while
// this node leaves, the owner it has without this node.
func (h *handoff) heir(v *cluster.View, slot int) cluster.Node {
	owner := v.Table.Owner(slot)
	if owner.Name == v.Self && h.leaving.Load() {
		if ru, ok := v.Table.RunnerUp(slot); ok {
			return ru
		}
	}
	return owner
}

// startMigration starts moving slots, which this node held by table held
// (nil: unknown), to node to. The caller holds switchMu.
func (n *Node) startMigration(to cluster.Node, slots []int, held *cluster.Table) {
	mg := &Migration{to: to, slots: slots, started: time.Now(), first: "reset", held: held}
	if a, ok := n.ho.died[to.Name]; ok && a.replaces(n.lease) {
		mg.first = "replace"
	}
	mg.phase.Store(int32(ModeCopying))
	st := &SlotState{mode: ModeCopying, peer: to, mg: mg}
	for _, slot := range slots {
		n.ho.set(slot, st)
	}
	n.moves.Add(1)
	n.ho.stats.moving.Add(1)
	go n.migrate(mg)
}

// migrate runs mg: copy, gate, last copy and cut (see migration).
func (n *Node) migrate(mg *Migration) {
	defer n.moves.Done()
	defer n.ho.stats.moving.Add(-1)
	if !n.waitLease(mg) {
		n.abandon(mg, mg.slots, errNotServing)
		return
	}
	if _, _, err := n.copyFrom(n.store, mg.to, mg.slots, false, mg.first); err != nil {
		n.log.Warn("cluster: first copy of moving slots failed; the last copy sends them all", "to", mg.to.Name, "err", err)
	}
	for {
		slots := n.settle(mg)
		if len(slots) == 0 {
			return
		}
		if !n.waitLease(mg) {
			n.abandon(mg, slots, errNotServing)
			return
		}
		mg.gate()
		gated := time.Now()
		n.ho.running.wait()
		keys, sent, err := n.copyFrom(n.store, mg.to, slots, true, mg.first)
		var unknown *doneUnknown
		switch {
		case err == nil:
			n.cut(mg, slots, keys, sent, time.Since(gated))
			return
		case errors.As(err, &unknown):
			// The new owner may serve the slots already: serving them here
			// again could serve a key on two nodes. Send their requests
			// there, as after a cut, but keep the copy: should it not have
			// taken them, its import times out onto the last copy, and if
			// the slots come back here they have their state.
			mg.open(ModeMoved)
			n.unmark(slots)
			n.log.Warn("cluster: no answer to a handoff's done; the slots go to their new owner, this node keeps its copy",
				"to", mg.to.Name, "slots", len(slots), "err", err)
			return
		}
		mg.open(ModeCopying)
		if time.Since(mg.started) > migrateWait {
			n.abandon(mg, slots, err)
			return
		}
		n.log.Warn("cluster: handing slots over failed; serving them on and retrying", "to", mg.to.Name, "slots", len(slots), "err", err)
		time.Sleep(100 * time.Millisecond) // a refusal or an unreachable peer: give the tables time to agree
	}
}

// errNotServing is why a migration gives up when this node does not hold
// its lease within migrateWait, or learned it was declared dead.
var errNotServing = errors.New("this node does not hold its lease, or was declared dead since the handoff began")

// waitLease waits until this node holds its lease, and reports whether it
// may hand mg's slots over: only a node that serves a slot hands it over,
// since the new owner takes its handoff's word that no one else serves it
// (a node paused or cut off past its lease may have had its slots taken
// over meanwhile: its reset IMPORT and DONE would end an import from the
// node that served them). It gives up at migrateWait, or once mg is
// disowned.
func (n *Node) waitLease(mg *Migration) bool {
	for !n.serving() {
		if mg.disowned.Load() || time.Since(mg.started) > migrateWait {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return !mg.disowned.Load()
}

// settle drops from mg the slots whose owner is no longer mg.to in this
// node's table: those it owns again are served here as before, those of
// a third node start a migration there. It returns the slots left.
func (n *Node) settle(mg *Migration) []int {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	v := n.cur.Load()
	var keep []int
	others := map[string][]int{}
	for _, slot := range mg.slots {
		switch owner := n.ho.heir(v, slot); owner.Name {
		case mg.to.Name:
			keep = append(keep, slot)
		case v.Self:
			n.ho.set(slot, nil)
		default:
			others[owner.Name] = append(others[owner.Name], slot)
		}
	}
	for name, slots := range others {
		to, _ := v.Table.Node(name)
		n.startMigration(to, slots, mg.held)
	}
	mg.slots = keep
	return keep
}

// cut ends a migration whose last copy the new owner took: the slots are
// moved, and this node's copy of their keys goes.
func (n *Node) cut(mg *Migration, slots []int, keys, bytes int, gated time.Duration) {
	mg.open(ModeMoved)
	n.unmark(slots)
	n.noteHandedTo(mg.to.Name, slots)
	st := &n.ho.stats
	st.slotsOut.Add(int64(len(slots)))
	st.keysOut.Add(int64(keys))
	st.bytesOut.Add(int64(bytes))
	took := time.Since(mg.started)
	st.lastMoveUsec.Store(took.Microseconds())
	if n.repl != nil {
		n.repl.KeepHanded(n.cur.Load(), slots)
		n.seedBackups(mg.to, slots) // see seed.go
	}
	n.dropSlots(replica.SlotSet(slots))
	n.log.Info("cluster: handed slots over", "to", mg.to.Name, "slots", len(slots), "keys", keys, "bytes", bytes,
		"took", took, "gated", gated)
}

// unmark drops the moved mark of the slots the routing table gives
// another node: a moved slot needs its mark only while the table still
// names this node (a leave not yet announced). Without it a request for the
// slot goes by the table, to its owner, once forwarded or not; and one
// sent back here as hopHandoff is answered errHandedOff all the same.
func (n *Node) unmark(slots []int) {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	v := n.cur.Load()
	for _, slot := range slots {
		if st := n.ho.state(slot); st != nil && st.Mode() == ModeMoved && v.Table.Owner(slot).Name != v.Self {
			n.ho.set(slot, nil)
		}
	}
}

// abandon lets slots go without a cut after migrateWait: they follow the
// table. A leaving node's new owner serves them from what it has. Any
// other keeps its slots' keys for their owner (kept.go), as a migration
// disowned at a rejoin does: it sends them once it holds its lease and
// reaches the owner, and answers no RELEASED for them meanwhile. Before,
// it dropped them and released the slots, and the new owner served them
// from nothing (the simulation's seed 17: an old owner without its lease
// for the 10 s, then cut off).
func (n *Node) abandon(mg *Migration, slots []int, err error) {
	n.switchMu.Lock()
	v := n.cur.Load()
	var gone []int
	kept := mg.disowned.Load() || !n.ho.leaving.Load()
	for _, slot := range slots {
		n.ho.swap(slot, n.ho.state(slot), nil)
		if v.Table.Owner(slot).Name != v.Self {
			if kept {
				n.ho.keep(slot)
				if mg.first == "replace" {
					n.ho.keptReplace[slot/64] |= 1 << (slot % 64)
				}
				if mg.disowned.Load() {
					n.ho.noteDisowned(slot, mg.held, v.Self)
				}
			} else {
				gone = append(gone, slot)
			}
		}
	}
	n.switchMu.Unlock()
	if kept {
		n.ho.notify()
		n.pushKept()
	}
	n.dropSlots(replica.SlotSet(gone)) // a leaving node keeps, and serves, what it could not hand over
	if kept {
		n.log.Error("cluster: could not hand slots over; keeping their keys for their owner, and sending them once it can", "to", mg.to.Name, "slots", len(slots), "err", err)
		return
	}
	n.log.Error("cluster: could not hand slots over; their new owner serves them from what it has", "to", mg.to.Name, "slots", len(slots), "err", err)
}

// dropSlots deletes this node's keys in the slots of b.
func (n *Node) dropSlots(b *replica.SlotBits) {
	m := n.store
	var es []shard.Entry
	for i := range m.Shards() {
		es = m.ExportShardFunc(i, b.KeyIn, es[:0])
		for _, e := range es {
			_ = m.Import(shard.Entry{Key: e.Key, Route: routeOf(e.Key)}, 0) // a tombstone: no error
		}
	}
}

// routeOf is the route Entry.Route wants for key: nil for a key of its own.
func routeOf(key []byte) []byte {
	if r := policy.Route(key); len(r) != len(key) {
		return r
	}
	return nil
}

// copyFrom sends the keys m holds of slots to node to, in chunks of
// RL.PEER IMPORT; the first has mode first (reset: to drops what it had
// for them; replace: the same for the slots to thinks it serves; add:
// nothing is dropped; pull: add, refused if to imports none of them, and
// joined with to's keys; handback: pull, sent by a node that counts to
// dead, see kept.go), the others add (pull and handback: the same). With
// done, RL.PEER DONE follows. It returns the keys and bytes sent.
func (n *Node) copyFrom(m *shard.Map, to cluster.Node, slots []int, done bool, first string) (int, int, error) {
	b := replica.SlotSet(slots)
	spec := []byte(formatSlots(slots))
	var es []shard.Entry
	keys, sent, mode, started := 0, 0, first, false
	send := func() error {
		if len(es) == 0 && started {
			return nil
		}
		payload := persistence.AppendEntries([]byte{}, es, time.Now().UnixNano())
		err := n.peerCall(to, cluster.PeerImport, mode, spec, payload)
		if mode != "pull" && mode != "handback" { // those say how every chunk is taken
			mode = "add"
		}
		keys, sent, started, es = keys+len(es), sent+len(payload), true, es[:0]
		return err
	}
	for i := range shardsOf(m) {
		es = m.ExportShardFunc(i, b.KeyIn, es)
		if approxBytes(es) >= chunkBytes {
			if err := send(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := send(); err != nil {
		return 0, 0, err
	}
	if done {
		// The last copy may have taken longer than the lease: DONE hands
		// the slots over only while this node still serves them, since a
		// majority may have taken them over once its lease ran out.
		if !n.serving() {
			return 0, 0, errNotServing
		}
		if err := n.peerCall(to, cluster.PeerDone, "", spec, nil); err != nil {
			if errors.Is(err, cluster.ErrUnreachable) {
				err = &doneUnknown{err}
			}
			return 0, 0, err
		}
	}
	return keys, sent, nil
}

// doneUnknown is a DONE whose answer did not come: the new owner may have
// taken the slots.
type doneUnknown struct{ err error }

func (e *doneUnknown) Error() string { return "no answer to DONE: " + e.err.Error() }
func (e *doneUnknown) Unwrap() error { return e.err }

func approxBytes(es []shard.Entry) int {
	n := 0
	for i := range es {
		n += len(es[i].Key) + 8*len(es[i].Counters) + 24
	}
	return n
}

// peerCall sends RL.PEER sub self [mode] spec [payload] to node to and
// checks that it answers OK.
func (n *Node) peerCall(to cluster.Node, sub, mode string, spec, payload []byte) error {
	return n.peerCallAs(n.cur.Load().Self, to, sub, mode, spec, payload)
}

// peerCallAs is peerCall for a caller that has this node's name at hand:
// a table-change hook may run before the view it applies is current.
func (n *Node) peerCallAs(self string, to cluster.Node, sub, mode string, spec, payload []byte) error {
	args := [][]byte{[]byte(cluster.PeerCommand), []byte(sub), []byte(self)}
	if mode != "" {
		args = append(args, []byte(mode))
	}
	args = append(args, spec)
	if payload != nil {
		args = append(args, payload)
	}
	fw := n.cfg.Mover
	if fw == nil {
		fw = n.cfg.Forwarder
	}
	reps, err := fw.Forward(context.Background(), to.Addr, [][][]byte{args})
	if err != nil {
		return err
	}
	if rep := string(reps[0]); rep != "+OK\r\n" {
		return errors.New(strings.TrimSpace(strings.TrimPrefix(rep, "-")))
	}
	return nil
}

// formatSlots writes slots as ranges: "0-99,205,300-310".
func formatSlots(slots []int) string {
	var sb strings.Builder
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(slots[i]))
		if j > i {
			sb.WriteByte('-')
			sb.WriteString(strconv.Itoa(slots[j]))
		}
		i = j + 1
	}
	return sb.String()
}

// parseSlots reads formatSlots' output.
func parseSlots(spec string) ([]int, bool) {
	var slots []int
	for _, part := range strings.Split(spec, ",") {
		a, b, isRange := strings.Cut(part, "-")
		from, err1 := strconv.Atoi(a)
		to, err2 := from, error(nil)
		if isRange {
			to, err2 = strconv.Atoi(b)
		}
		if err1 != nil || err2 != nil || from < 0 || to < from || to >= cluster.Slots {
			return nil, false
		}
		for s := from; s <= to; s++ {
			slots = append(slots, s)
		}
	}
	return slots, len(slots) > 0
}
