package handoff

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// This file holds the table-change hook and the per-slot handoff state the
// router consults; move.go moves the slots' keys. The model is
// Redis Cluster's MIGRATING/IMPORTING: a slot's old owner serves it until
// it has handed the slot's keys over, its new owner sends the slot's
// requests back to the old owner until then. See docs/cluster.md.

// Mode is what this node is doing with a slot that is moving.
type Mode int32

const (
	ModeImporting Mode = iota + 1 // new owner: the old owner serves the slot until it says done
	ModeCopying                   // old owner: serves the slot while its keys are copied out
	ModeGated                     // old owner: the last copy is being made; requests wait
	ModeMoved                     // old owner: handed over; requests go to the new owner
	ModeAdopted                   // handed to this node before its table names it the owner: serve here
)

func (m Mode) String() string {
	return [...]string{"", "importing", "migrating", "gated", "moved", "adopted"}[m]
}

// SlotState is one moving slot's state. It is immutable but for mg's
// phase, which all the slots of one migration share, and refused.
type SlotState struct {
	mode  Mode         // ModeImporting, ModeAdopted, or ModeCopying for a migration (then see mg)
	peer  cluster.Node // the old owner when importing; the new owner when migrating
	mg    *Migration   // the batch of slots moving out with this one; nil unless migrating
	until time.Time    // importing: when this node stops waiting and serves from what it has
	// keep marks an import of a slot this node owned all along, after it
	// learned it had been declared dead (see rejoin): a handback is joined
	// with its keys (peerImport), and only mode replace replaces them.
	keep bool
	// guess marks a joiner's import from the owner the slot has without it
	// (importFrom): its guess of the slot's backup, by a first view that
	// may lack members. A later view re-points it (see slotChange).
	guess bool
	// past are the old owners whose ASKs re-pointed this import, in
	// order (see askElsewhere): its RL.PEER RELEASED names them (PAST), so
	// that no node names one of them back (askChain); a chain of them
	// longer than the table has members goes round in a circle, and is
	// not followed further.
	past []string
	// waited marks an import that has waited importWait and asks its old
	// owner RL.PEER RELEASED (expireImports): see ImportDown.
	waited bool
	// refused is set once the import's old owner answered a request for
	// one of its slots HANDEDOFF: it does not serve them either (see
	// ImportDown).
	refused atomic.Bool
}

// keptBack: a slot whose keys this node kept for another owner (kept.go)
// and that its table gives back to it is imported from its old owner as
// any slot it gains, but keeping its keys, as a rejoin's own slot is
// (keep): they are the slot's state, so a PULL's answer or kept keys are
// joined with them (peerImport), and only a handoff in mode replace
// replaces them. Before, what came replaced them: the
// simulation's seed 2456, n3 took slot 11822 over at n1's confirmed death
// and served it to 30, kept its keys for n1 when its rejoin disowned the
// handback, got the slot back with the next table, and n1's kept keys
// from before its cut (16, in mode pull) replaced n3's 30.

// keepImport marks slot's import, if any, as one that keeps this node's
// keys (keptBack), and this node as the slot's holder: should the table
// move the slot on before the import ends, it keeps the keys for the new
// owner again (slotChange) rather than naming the import's peer, which
// never had them. Before, it named the peer and released the slot: the
// simulation's seed 2360, n4's kept keys of 14392 (48) came back with one
// table and went on with the next, and n1 served the slot from 0. The
// caller holds switchMu.
func (h *handoff) keepImport(slot int) {
	if st := h.state(slot); st != nil && st.mode == ModeImporting && !st.keep {
		h.set(slot, &SlotState{mode: ModeImporting, peer: st.peer, until: st.until, keep: true, guess: st.guess, past: st.past})
		h.holdBy(slot, "")
	}
}

// Mode returns the slot's mode at this moment.
func (st *SlotState) Mode() Mode {
	if st.mg != nil {
		return Mode(st.mg.phase.Load())
	}
	return st.mode
}

// handoff is a node's per-slot handoff state and its counters.
type handoff struct {
	slots   [cluster.Slots]atomic.Pointer[SlotState] // nil: the slot follows the table; written by set and swap only
	active  atomic.Int32                             // at least the slots whose state is not nil: see state
	running barrier                                  // local runs of keyed commands, which a cut waits for
	stats   handoffStats
	leaving atomic.Bool // HandOff has begun: this node's slots go to their runner-ups

	inMu sync.Mutex        // guards in
	in   map[string][2]int // keys and bytes of the copy under way from each node

	changeMu sync.Mutex    // guards changed
	changed  chan struct{} // closed by notify when slots' states change; nil when nobody waits
	// Guarded by Node.switchMu, since only the hook touches them:
	counts bool // the routing table shows what this node served (see handoffHook)
	shared bool // this node has been in a table with other members
	// died are the members this node saw declared dead and not since
	// handed slots back to (see resume.go).
	died map[string]absence
	// handed are the slots each node handed this process over (its DONE):
	// their copies from that node are not needed (see restore.go).
	handed map[string]*replica.SlotBits
	// pulled are the slots each node sent copies of in answer to this
	// node's RL.PEER PULL (IMPORT mode pull): its DONE for them skips
	// those this node imports from another node (see takeSlots).
	pulled map[string]*replica.SlotBits
	// returned are, for each member that (re)appeared in a view, its slots
	// a third node held in the view before: that node hands them back, so
	// this node does not answer the member's RL.PEER PULL for them from
	// its copies (see backedUpFor).
	returned map[string]*replica.SlotBits
	// unlost are the slots the last change took from the lost ones;
	// forgone, the slots lost here that another node owns now, whose
	// RL.PEER RELEASED this node never answers released (see
	// lost.go).
	forgone replica.SlotBits
	unlost  *replica.SlotBits
	// kept are the slots whose keys this node keeps for their owner by
	// the table, and sends it once it holds its lease (kept.go);
	// keptReplace, those of them it was handing back in mode replace.
	kept, keptReplace replica.SlotBits
	// keptBehind are, of the kept slots, those whose import (a rejoin's)
	// was from the node that took them over at this node's death, which
	// may hold newer keys: that node, by slot (kept.go, keptBehind).
	keptBehind map[int]string
	// disownBy are, of the kept slots, those of a handoff a rejoin
	// disowned, with the slot's backup in the table this node held them
	// by: the node that took them over if this node's death was confirmed
	// (kept.go, disownedBy).
	disownBy map[int]string
	// sentBehind are the slots whose keptBehind keys went (no DONE) and
	// stay in this node's store, with the node they named holder; the
	// mark lasts until the table moves the slot on or back (backBehind).
	sentBehind map[int]string
	// behindDead are the slots whose keptBehind keys went naming a node
	// dead here: the owner they went to, and that node (kept.go,
	// forgetBehindDead).
	behindDead map[int][2]string
	// holder is, per slot, the node this one last knew to hold its state
	// when not itself: the node it handed the slot to, or imports it from
	// (see holder.go); got, the slots whose keys a PULL's answer or
	// kept keys brought while this node imported them.
	holder [cluster.Slots]string
	// handedTo is, per slot, the node and process this node last handed
	// it to (handed.go).
	handedTo [cluster.Slots]handedMark
	got      replica.SlotBits
	// gotFrom is, per slot of got, the node whose push brought its keys.
	gotFrom [cluster.Slots]string
	// lostFrom are the lost slots whose holder died while this node
	// imported them, which come back with it (see lostComeBackLocked).
	lostFrom replica.SlotBits
	// ownLost are those of them a rejoin waited for keeping its keys: they
	// come back too when the rejoin proves unconfirmed (unconfirmed.go),
	// and, forgone to their holder, are not released to it (backKeeps).
	ownLost replica.SlotBits
	// keptLost are those of ownLost whose keys this node kept for their
	// owner in mode handback before the table gave them back (keptLost).
	keptLost replica.SlotBits
	// deadPrev is, per slot that this node's table gave another node
	// because the slot's owner before died, that dead owner, "" for none
	// (see noteDeadPrev).
	deadPrev [cluster.Slots]string
	// deadPrevInc is, per slot whose deadPrev names a live third node
	// (thirdPrev), that node's incarnation when this node's table gave it
	// the slot, and per slot whose deadPrev names a dead owner, the
	// owner's last one this node heard before the death (deadRestart), 0
	// for none; ownerInc, per slot, its owner's incarnation
	// when this node's table gave it the slot (see restartedSince).
	deadPrevInc, ownerInc [cluster.Slots]uint64
	// guessPrev are the slots whose deadPrev names a live old owner that
	// this node holds no copies of (thirdPrev without them): it names that
	// owner only to an asker that follows chains, not a rejoin's question
	// (see askChain).
	guessPrev replica.SlotBits
	// servedPrev are the slots whose deadPrev names a live third node
	// whose copies this node held (thirdPrev with them: that node served
	// the slot), and served those of them at the start of a table change
	// (see importServer).
	servedPrev replica.SlotBits
	// served is servedPrev's slots with the node deadPrev named, taken
	// at the start of a table change before noteDeadPrev clears them
	// (servedBy; read by importServer).
	served map[int]string
	// relay are the livePrev marks of guesses this node asks about for
	// the slots' new owners (see relayGuess).
	relay relays
	// seen are the members this process has had in a table, or recorded
	// as dead ones it never saw (see seedDeadPrev).
	seen map[string]bool
	// had are the members this process has had in a table shared with
	// another (see neverSawLocked).
	had map[string]bool
	// refusals are, per slot owner, its refusals of kept keys (kept.go).
	refusals keptRefusals
	// waits are when each slot's import began, for the stuck imports'
	// count and their operator's end (stable.go).
	waits waits
}

// state returns slot's handoff state, nil when it follows the table.
//
// Every keyed request asks, and slots is 128 KiB: a random slot's entry
// is a cache miss, 5% of a forwarding node's CPU. Outside a handoff no
// slot has a state, and one shared counter says so.
func (h *handoff) state(slot int) *SlotState {
	if h.active.Load() == 0 {
		return nil
	}
	return h.slots[slot].Load()
}

// set sets slot's state. active never counts fewer slots than have a
// state: it grows before a state appears and shrinks after one goes, so
// a reader that finds it 0 finds every slot following the table.
func (h *handoff) set(slot int, st *SlotState) {
	if st != nil {
		h.active.Add(1)
	}
	old := h.slots[slot].Swap(st)
	if old != nil {
		h.active.Add(-1)
	}
	h.waits.note(slot, old, st)
}

// swap sets slot's state to st if it is old, and reports whether it did.
func (h *handoff) swap(slot int, old, st *SlotState) bool {
	if st != nil {
		h.active.Add(1)
	}
	ok := h.slots[slot].CompareAndSwap(old, st)
	switch {
	case !ok && st != nil:
		h.active.Add(-1)
	case ok && old != nil:
		h.active.Add(-1)
	}
	if ok {
		h.waits.note(slot, old, st)
	}
	return ok
}

// notify wakes the requests waiting for a slot's state to change.
func (h *handoff) notify() {
	h.changeMu.Lock()
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	h.changeMu.Unlock()
}

// waitChange waits at most d for slot's state to be other than st.
func (h *handoff) waitChange(slot int, st *SlotState, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		h.changeMu.Lock()
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.changeMu.Unlock()
		if h.state(slot) != st {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}

// moving counts the slots being imported and being migrated out now.
func (h *handoff) moving() (importing, migrating int) {
	for i := range h.slots {
		if st := h.slots[i].Load(); st != nil {
			switch st.Mode() {
			case ModeImporting:
				importing++
			case ModeCopying, ModeGated:
				migrating++
			}
		}
	}
	return importing, migrating
}

// barrier lets a cut wait until every local run that might have read a
// slot's state before the cut changed it has finished, so that the last
// copy of the slot's keys includes its change. A run enters before it
// reads the state and leaves after it ran; wait flips the epoch twice and
// waits each side to drain, so a run that entered before wait began is
// finished by the time wait returns, and one that enters later reads the
// new state. It costs a run two atomic additions, on one of a few counters.
type barrier struct {
	epoch   atomic.Uint32
	stripes [8]struct {
		n [2]atomic.Int64
		_ [48]byte // a cache line each, so the stripes do not share one
	}
}

// enter registers a run of connection id and returns its ticket for leave.
func (b *barrier) enter(id int64) uint32 {
	e := b.epoch.Load() & 1
	b.stripes[id&7].n[e].Add(1)
	return e
}

func (b *barrier) leave(id int64, ticket uint32) { b.stripes[id&7].n[ticket].Add(-1) }

// wait returns once every run that entered before it was called has left.
func (b *barrier) wait() {
	for range 2 {
		old := (b.epoch.Add(1) - 1) & 1
		for i := range b.stripes {
			for b.stripes[i].n[old].Load() != 0 {
				time.Sleep(50 * time.Microsecond) // a run is arithmetic under a shard lock: microseconds
			}
		}
	}
}

// handoffStats count the slots and keys this node moved, for INFO and /metrics.
type handoffStats struct {
	slotsIn, slotsOut atomic.Int64
	keysIn, keysOut   atomic.Int64
	bytesIn, bytesOut atomic.Int64
	moving            atomic.Int64 // migrations and imports under way
	lastMoveUsec      atomic.Int64 // how long the last migration out took, to its cut
	importTimeouts    atomic.Int64 // slots whose import was given up after importWait
	crossedCut        atomic.Int64 // requests sent back to the old owner that reached it after its cut
}
