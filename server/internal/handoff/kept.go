package handoff

import (
	"errors"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// A node can hold a slot's state that it may not hand over as the live
// handoff does, since another node may have served the slot after it:
//
//   - a slot this node waits to have handed back after it learned it was
//     declared dead (rejoin: an import that keeps its keys), which a later
//     table gives to a third node (before, the import was dropped and
//     nothing handed over: the third node imported the slot from its own
//     guess at the old owner, which released it, and served it from
//     nothing; the simulation's cause C, and safered4's TestRedPausedAtHeal);
//   - a slot this node was handing over when it learned it was declared
//     dead (rejoin disowns the migration: before, its keys were dropped
//     with the slot, though this node served it last in the common case).
//
// Such keys are kept: this node never says it released the slot (RELEASED
// leaves it out), and once it holds its lease it sends the keys to the
// slot's owner by its table as a PULL's answer does (IMPORT mode pull,
// then DONE): the owner stores them where it imports the slot (a handoff's
// reset IMPORT or last copy, from a node that served the slot later,
// replaces them again), and the DONE ends the owner's import only if the
// owner imports the slot from this node (takeSlots). So kept keys never
// make a node serve a slot that another node still serves (the owner
// waits for the node its import is from, as ever), and a node whose guess
// at the old owner releases the slot serves it from these keys rather
// than from nothing. Then this node drops them. See docs/cluster.md,
// "Safety".

// A new process imports every slot its first table gives it from the
// slot's owner without it (a guess: see restore.go), keeping the keys its
// data dir restored, which no copy replaces; once the import ends, it
// serves the slot from them. A table that moves such a slot on before the
// import ends (the slot's owner, paused past its confirmed death, is
// back) dropped the import and, with it, what the store held: the keys
// stayed in the store, unsent, and the process answered the owner's PULL
// as the slot's backup, with its copies (none: its store is not its
// copies) and a DONE. The owner, waiting for its slots to be handed back,
// served them from its keys of before its pause, though this node's old
// process had served them since (fences11's process test: 135 above the
// limit in 1 run of 3, 15 keys with 9 more each). So a slot whose keys the
// store holds when the table moves such an import on is kept (see above):
// those keys are what this node last served of it, and go to the owner
// once this node holds its lease, in mode handback when it counts the
// owner dead (its unseen members too: see seedDeadPrev), in mode pull
// otherwise; a kept slot gets no DONE without them (backedUpFor). A store
// with none of the slot's keys (no data dir, or one that never served the
// slot) keeps nothing, as before.

// keepRestored keeps the slots of guessed (imports of a new process that
// nv moves on) whose keys the store holds. The caller holds switchMu.
func (n *Node) keepRestored(nv *cluster.View, guessed *replica.SlotBits) {
	if *guessed == (replica.SlotBits{}) {
		return
	}
	h := &n.ho
	held := slotsHeld(n.store, guessed)
	for slot := range cluster.Slots {
		if !held.Has(slot) {
			continue
		}
		h.keep(slot)
		if a, ok := h.died[nv.Table.Owner(slot).Name]; ok && a.replaces(n.lease) {
			h.keptReplace[slot/64] |= 1 << (slot % 64)
		}
	}
}

// slotsHeld returns the slots of in of which m holds a key.
func slotsHeld(m *shard.Map, in *replica.SlotBits) *replica.SlotBits {
	var held replica.SlotBits
	var es []shard.Entry
	for i := range shardsOf(m) {
		es = m.ExportShardFunc(i, in.KeyIn, es[:0])
		for _, e := range es {
			slot := cluster.Slot(policy.Route(e.Key))
			held[slot/64] |= 1 << (slot % 64)
		}
	}
	return &held
}

// keep marks slots' keys as kept for their owner by the table (see above).
// The caller holds switchMu.
func (h *handoff) keep(slot int) { h.kept[slot/64] |= 1 << (slot % 64) }

// unkeep clears slot's kept marks. The caller holds switchMu.
func (h *handoff) unkeep(slot int) {
	h.kept[slot/64] &^= 1 << (slot % 64)
	h.keptReplace[slot/64] &^= 1 << (slot % 64)
	delete(h.keptBehind, slot)
	delete(h.disownBy, slot)
}

// keptBehind: a rejoin's import of a slot from the node that took it over
// at this node's confirmed death (st.peer), moved on by the table to a
// third node before that node handed it back, keeps this node's keys
// (above), which may be older than that node's: it served the slot since,
// unless it had it lost (no copies of this node's), when this node's
// keys are the state. Sent with a DONE, they ended the new owner's
// import, and it served them while that node, paused, held newer keys:
// the simulation's seed 4229, n2 waited for n4's handback of 11565 (n4
// took it over at n2's death and served it to 48, then paused); the table
// gave the slot to n0's new process, and n2's kept 42 served there. So
// such keys go without a DONE (IMPORT only: the new owner stores them and
// goes on importing), and this node then names that node the slot's
// holder: RELEASED answers "ASK" it. The new owner imports from it: it
// hands the slot over if it served it, and otherwise names this node
// (its holder of a slot it lost), whose keys came already, so the new
// owner serves them (askElsewhere). This node keeps its keys in its
// store: the new owner holds them only as an import's, neither served
// nor shipped to a backup, and a table that gives the slot back here
// before it ends would otherwise have this node import it from that node
// and serve nothing (the simulation's seed 3986, with the keys dropped:
// served from 0 where 66 were used).

// A peer that nv says died (confirmed, so out of nv's table) is no
// reason to send the keys with a DONE: it served the slot after this
// node's death unless it had it lost, and it held newer keys when it
// died. So its keys go behind too, naming the dead node: the new owner
// has the slot lost (askElsewhere) until that node is back, or an
// operator forgets it, as for any slot whose state died with its holder.
// Before, they went with a DONE, as when the peer leaves: the
// simulation's cold seed 863, n1's rejoin waited for slot 11822 from n3,
// which had taken it over at n1's death and served it to 53, then
// paused; n3's confirmed death moved the slot to n2, and n1's kept 41
// ended n2's import.

// The dead node stays the slot's holder here only while the owner the
// keys went to holds the slot: that owner may serve them without asking
// this node (it took the slot over from its own table's dead old owner),
// and once the table moves the slot off it, the holder is that owner, as
// after a DONE. Before, the dead node stayed the holder: the simulation's
// seed 407, n2 took slot 11822 over from its dead old owner n3 (which had
// never served it: n1's death was never confirmed) and served n1's keys
// to 96; the table gave the slot back to n1, which imported it from n3,
// its holder, then handed n3 its 66 as the table moved the slot on.

// noteBehindDead records that slots' kept keys went to owner naming dead,
// a node out of this node's table. The caller holds switchMu.
func (h *handoff) noteBehindDead(owner, dead string, slots []int) {
	if h.behindDead == nil {
		h.behindDead = map[int][2]string{}
	}
	for _, slot := range slots {
		h.behindDead[slot] = [2]string{owner, dead}
	}
}

// forgetBehindDead makes the owner the kept keys went to the holder of
// each slot of behindDead that nv moves off it, unless the holder changed
// since. The caller holds switchMu, before the hook reads any holder.
func (h *handoff) forgetBehindDead(nv *cluster.View) {
	for slot, bd := range h.behindDead {
		if nv.Table.Owner(slot).Name == bd[0] {
			continue
		}
		if h.holder[slot] == bd[1] {
			h.holdBy(slot, bd[0])
		}
		delete(h.behindDead, slot)
	}
}

// keepBehind marks slot, kept from st, a rejoin's import, as keptBehind
// when st's peer is another node, in nv's table or dead there, that does
// not own the slot there. The caller holds switchMu.
func (h *handoff) keepBehind(slot int, st *SlotState, nv *cluster.View) {
	if !st.keep || st.peer.Name == nv.Self || st.peer.Name == nv.Table.Owner(slot).Name || !nv.Table.Has(st.peer.Name) && !diedIn(nv, st.peer.Name) {
		return
	}
	if h.keptBehind == nil {
		h.keptBehind = map[int]string{}
	}
	h.keptBehind[slot] = st.peer.Name
}

// backBehind: a slot whose keptBehind keys went (sentBehind), that the
// table gives back to this node while the owner they went to still owned
// it, and whose import from the holder it named the table then moves on
// to that very holder, keeps its keys for it (kept, pushed with a DONE):
// the holder is importing the slot, so it did not serve it since, and
// the owner they went to never ended its import (the table took the slot
// from it). Before, the import kept nothing, and the node released the
// slot to the holder's RELEASED (holder == asker): the simulation's seed
// 254 at a 1 s import wait, n4 sent 73 of slot 14392 behind to n0 (holder
// n1), n0 crashed, n4 got the slot back and imported it from n1 (a new
// process since), the table moved it on to n1 at n0's confirmed death,
// and n1 served it from 0. Only such slots: an import moved on to its own
// old owner keeps nothing otherwise (that would push a live handoff's
// first copy back to its sender at every flap). And the import does not
// keep its keys while it runs (as a kept slot back does): the owner they
// went to may have served them since and handed the slot back in mode
// reset, which must replace them (seed 341, with that form: n0 served 129
// to 132, and n4 kept its 129). The mark goes once the slot is served here
// or imported from another node, or moves to another owner.

// noteSentBehind marks slots as sent behind, naming holder. The caller
// holds switchMu.
func (h *handoff) noteSentBehind(holder string, slots []int) {
	if h.sentBehind == nil {
		h.sentBehind = map[int]string{}
	}
	for _, slot := range slots {
		h.sentBehind[slot] = holder
	}
}

// behindTo reports whether slot's import st, which the table moves on to
// owner, was from the holder its sent-behind keys named, and owner is that
// holder (backBehind). The caller holds switchMu.
func (h *handoff) behindTo(slot int, st *SlotState, owner string) bool {
	p, ok := h.sentBehind[slot]
	return ok && p == owner && st.peer.Name == owner
}

// backBehind keeps slot's sent-behind mark, after slotChange, only while
// the slot is still with the owner its keys went to, or imported here from
// the holder they named. The caller holds switchMu.
func (h *handoff) backBehind(old, nv *cluster.View, slot int) {
	p, ok := h.sentBehind[slot]
	if !ok {
		return
	}
	owner := nv.Table.Owner(slot).Name
	st := h.state(slot)
	switch {
	case owner == nv.Self && (st == nil || st.mode != ModeImporting || st.peer.Name != p):
		delete(h.sentBehind, slot) // served here, or imported from another node
	case owner != nv.Self && old != nil && owner != old.Table.Owner(slot).Name:
		delete(h.sentBehind, slot) // moved on: kept (behindTo), or another owner's import holds it
	}
}

// servedNow returns the slots of own (see servedSlots) that this node
// serves now, leaving out those it waits to have handed back after a
// rejoin, which take kept keys whether or not it holds its lease.
func (n *Node) servedNow(own *replica.SlotBits) *replica.SlotBits {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	now := *own
	for slot := range cluster.Slots {
		if now.Has(slot) && n.ho.state(slot) != nil {
			now[slot/64] &^= 1 << (slot % 64)
		}
	}
	return &now
}

// A node that does not hold its lease may not know it was declared dead:
// a paused or cut-off owner, back, serves nothing until a majority grants
// it a lease, and learns of its death from their answers. Until then its
// handoff state still says it serves its slots as their owner, and an
// IMPORT of kept keys (or a PULL's answer) for them only filled in the
// keys it lacked, keeping its older ones, while the sender, told OK,
// dropped its newer keys: the simulation's seed 1463, n4 pushed slot
// 14649's keys (16 used) to n0 as n0 resumed from a pause, n0 kept its 13,
// and after its rejoin n4's PULL answer had nothing left to send. So such
// an IMPORT is refused (errKeepsOwn): the sender keeps its keys and sends
// them again at the next table change or RELEASED question, by which
// time this node has learned of its death and waits for them (rejoin),
// or holds its lease and its keys are the slots' state.

// errKeepsOwn is the answer to an IMPORT pull or handback that would keep
// this node's own keys of slots it serves while it does not hold its
// lease (see keepsOwnUnserved).
const errKeepsOwn = "TRYAGAIN this node does not hold its lease and keeps its own keys of these slots"

// keepsOwnUnserved reports whether an IMPORT pull or handback of slots
// would keep this node's keys of some of them, as a slot it serves as
// their owner with no handoff under way, while it does not hold its
// lease. A rejoin's slots wait for their handback (an import that keeps
// its keys, see rejoin), and take such an IMPORT as before.
func (n *Node) keepsOwnUnserved(slots []int) bool {
	if n.serving() {
		return false
	}
	own, _ := n.servedSlots(slots)
	return *n.servedNow(own) != replica.SlotBits{}
}

// pushKept sends the kept keys to their owners once this node holds its
// lease (at most migrateWait from now); one push runs at a time.
func (n *Node) pushKept() {
	if !n.pushing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer n.pushing.Store(false)
		for end := time.Now().Add(migrateWait); !n.serving(); {
			if time.Now().After(end) {
				return // the next table change, or RELEASED question, tries again
			}
			time.Sleep(50 * time.Millisecond)
		}
		for k, slots := range n.takeKept(time.Now()) {
			n.sendKept(k, slots)
		}
	}()
}

// keptFor is where kept keys go, and in which IMPORT mode.
type keptFor struct {
	to     cluster.Node
	mode   string // pull, or handback when the owner is counted dead: both joined (peerImport); an older owner replaces with a handback
	behind string // keptBehind's node: no DONE, and it is named the holder; "" for none
}

// takeKept returns, by owner and mode, the kept slots that another node
// owns by the table and that no handoff moves, unless that owner's
// refusals hold them back at now. They stay kept while their push runs
// (one at a time: pushing): a RELEASED question the owner asks meanwhile
// finds them kept and releases nothing. Before, their marks were cleared
// first, and such a question, one round trip wide, released a slot whose
// push the owner then refused (the simulation's seed 7721).
func (n *Node) takeKept(now time.Time) map[keptFor][]int {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	v := n.cur.Load()
	out := map[keptFor][]int{}
	for slot := range cluster.Slots {
		if !n.ho.kept.Has(slot) {
			continue
		}
		owner := v.Table.Owner(slot)
		if owner.Name == v.Self || n.ho.state(slot) != nil || n.ho.refusals.waits(owner.Name, now) {
			continue
		}
		n.disownedBehind(v, slot)
		k := keptFor{to: owner, mode: "pull", behind: n.ho.keptBehind[slot]}
		if n.ho.keptReplace.Has(slot) {
			k.mode = "handback"
		}
		out[k] = append(out[k], slot) // still kept until sendKept's push ends: see sendKept
	}
	return out
}

// sendKept sends to the kept keys of slots as a PULL's answer, then drops
// them; slots whose owner did not take them are kept again, unless the
// owner refused them too often (see keptRefusals).
func (n *Node) sendKept(k keptFor, slots []int) {
	to := k.to
	keys, _, err := n.copyFrom(n.store, to, slots, k.behind == "", k.mode)
	if err != nil && err.Error() == errNotImporting {
		err = nil // it imports none of them: a handoff brought them
	}
	var unknown *doneUnknown
	taken := errors.As(err, &unknown) // the owner stored them, and may have served them since
	n.switchMu.Lock()
	wait, give := n.ho.refusals.note(to.Name, err, time.Now())
	v := n.cur.Load()
	var gone []int
	for _, slot := range slots {
		switch {
		case v.Table.Owner(slot).Name == v.Self || n.ho.state(slot) != nil:
			n.ho.unkeep(slot) // its own again, or moving: the table's handoff settles it
		case err != nil && !give:
			// Still kept (takeKept left the marks): sent again later, in
			// mode pull once the owner has them (see sentOnce).
			if taken {
				n.ho.keptReplace[slot/64] &^= 1 << (slot % 64)
			}
		default:
			n.ho.unkeep(slot)
			gone = append(gone, slot)
		}
	}
	n.switchMu.Unlock()
	switch {
	case give:
		n.dropSlots(replica.SlotSet(gone))
		n.log.Error("cluster: a slot's owner refused the keys this node kept for it too often; dropping them, the owner serves the slots from what it has",
			"to", to.Name, "slots", len(gone), "refusals", keptTries, "err", err)
		return
	case err != nil:
		if wait > 0 {
			time.AfterFunc(wait, n.pushKept)
		}
		n.log.Warn("cluster: could not send a slot's owner the keys this node kept for it; trying again later",
			"to", to.Name, "slots", len(slots), "err", err, "back_off", wait)
		return
	}
	if k.behind != "" {
		n.switchMu.Lock()
		n.ho.setHolder(k.behind, gone) // see keptBehind: the keys stay here
		n.ho.noteSentBehind(k.behind, gone)
		if !n.cur.Load().Table.Has(k.behind) {
			n.ho.noteBehindDead(to.Name, k.behind, gone)
		}
		n.switchMu.Unlock()
	} else {
		n.dropSlots(replica.SlotSet(gone))
		n.noteHandedTo(to.Name, gone)
	}
	n.log.Info("cluster: sent a slot's owner the keys this node kept for it", "to", to.Name, "slots", len(slots), "keys", keys, "holder", k.behind)
}

// sentOnce: kept keys whose IMPORTs the owner answered OK, and whose DONE
// got no answer (doneUnknown: a cut, or the owner's crash), are stored
// there; the owner may have taken the slots and served them since. They
// were sent again as they were, and in mode handback they replaced the
// owner's newer keys at its next rejoin: the simulation's seed 4181, n4
// pushed slot 12336's 49 to n0, whose answer a cut lost; n0 served the
// slot to 60, was declared dead again (unconfirmed), and n4's second push
// brought it back to 49. So they go on in mode pull: an owner that still
// waits for them holds them already (the join changes nothing), and one
// that serves the slot answers that it imports none of them.

// A reachable owner that refuses kept keys (an error of its own, such as
// shard.ErrFull once it reaches --max-keys or --maxmemory) was asked again
// at each of its RELEASED questions, once a second, each time with every
// key of the slots, and served them as down for as long as it refused. So
// such refusals back off, keptRetry doubling up to keptTries of them
// (about half a minute in all); then this node drops the keys, as a
// handoff abandoned after migrateWait did before it kept them, and the
// owner's next RELEASED question finds the slots released, served from
// what the owner has: a loss, logged. A transport error (the owner cut off
// or restarting) and an owner without its lease (errKeepsOwn) neither
// count nor back off: the keys wait for it, as ever.

// Bounds of the kept keys' refusals.
const (
	keptRetry = time.Second // the back-off after an owner's first refusal, doubled at each next one
	keptTries = 6           // refusals after which the keys are dropped
)

// keptRefusals are the refusals of kept keys per owner. Guarded by
// Node.switchMu.
type keptRefusals struct {
	base  time.Duration // keptRetry, unless a test sets it
	tries int           // keptTries, unless a test sets it
	by    map[string]keptRefused
}

// keptRefused is an owner's refusals in a row, and when the next push to
// it may go.
type keptRefused struct {
	n    int
	next time.Time
}

// waits reports whether pushes to owner wait at now.
func (r *keptRefusals) waits(owner string, now time.Time) bool {
	return now.Before(r.by[owner].next)
}

// note records err, a push's outcome at now to owner, and returns how long
// the next push waits, and whether to give the keys up.
func (r *keptRefusals) note(owner string, err error, now time.Time) (time.Duration, bool) {
	if err == nil {
		delete(r.by, owner)
		return 0, false
	}
	if errors.Is(err, cluster.ErrUnreachable) || err.Error() == errKeepsOwn || err.Error() == errLostElsewhere {
		return 0, false
	}
	base, tries := r.base, r.tries
	if base == 0 {
		base, tries = keptRetry, keptTries
	}
	c := r.by[owner]
	c.n++
	if c.n >= tries {
		delete(r.by, owner)
		return 0, true
	}
	wait := base << (c.n - 1)
	c.next = now.Add(wait)
	if r.by == nil {
		r.by = map[string]keptRefused{}
	}
	r.by[owner] = c
	return wait, false
}

// keeps reports whether this node keeps slot's keys for its owner.
func (n *Node) keeps(slot int) bool {
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	return n.ho.kept.Has(slot)
}
