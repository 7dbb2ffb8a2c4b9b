package replica

import (
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/rlstore/rlstore/cluster"
)

// syncs records, on a backup, which owner's full sync last brought each
// slot's copies: the precise answer to whether this node holds a slot's
// state when its owner dies (see HeldBy).
type syncs struct {
	mu   sync.Mutex
	from [cluster.Slots]string // guarded by mu; "" for none
	// pending are, per owner, the slots its full sync under way (of
	// number gen here) will bring, held once it ends (see PeerSynced);
	// guarded by mu.
	pending map[string]pendingSync
	// lost are, per slot, the owner whose full sync said it has the slot
	// lost, and the slot's holder there (see LostAt); guarded by mu.
	lost [cluster.Slots]lostMark
}

// lostMark is a slot its owner's full sync named lost there (SYNC's
// LOST), with the node that holds its state by the owner's record, ""
// for none it knows.
type lostMark struct{ owner, holder string }

// A slot its owner has lost (server/internal/handoff, lost.go) holds no
// state there: the node it was lost from does. A full sync that shipped
// its keys made them held copies on the backup, which promoted them at
// the owner's death: the simulation's seed 2363, n4's rejoin had slot
// 5911 lost from n3, which served it to 36, synced n4's 23 to n2, and n2
// served 23 once n4 crashed. Leaving the slot out alone made the backup
// answer a restarted owner's PULL with a DONE without copies (no record
// reads as "held by nobody", see handoff's backedUpFor), and the new
// process served the slot from nothing. So a full sync names such slots,
// with their holders (RL.PEER SYNC drop backed ENDS LOST holder bitmap
// ...), ships none of their keys, and the backup records them (LostAt):
// it answers the owner's PULL for them with no DONE and its RELEASED with
// "ASK" the holder, as for a slot lost here. A backup that predates LOST
// refuses that form (cluster.PeerRefused), and gets the slots' keys as
// held copies, as before: a mixed-version cluster keeps the older
// behaviour until every node runs this one.

// LostAt returns the holder of slot by owner's last full sync here, and
// whether that sync named the slot lost at owner.
func (r *Replicator) LostAt(slot int, owner string) (string, bool) {
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	m := r.syncs.lost[slot]
	return m.holder, m.owner != "" && m.owner == owner
}

// noteLost records owner's lost slots: holders pairs a holder with the
// bitmap of the slots it holds.
func (r *Replicator) noteLost(owner string, holders [][]byte) {
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	for i := 0; i+1 < len(holders); i += 2 {
		bm := holders[i+1]
		for slot := range cluster.Slots {
			if bm[slot/8]&(1<<(slot%8)) != 0 {
				r.syncs.lost[slot] = lostMark{owner: owner, holder: string(holders[i])}
			}
		}
	}
}

// pendingSync is a full sync's backed slots, until its end.
type pendingSync struct {
	gen    uint64
	backed SlotBits
}

// notePending records a full sync from owner, number gen here, that ends
// with RL.PEER SYNCED: it dropped the copies of the slots in drop, and
// brings those of backed, which count as held only at its end.
func (r *Replicator) notePending(owner string, gen uint64, drop, backed []byte) {
	r.noteSync(owner, drop, nil)
	ps := pendingSync{gen: gen}
	for slot := range cluster.Slots {
		if backed[slot/8]&(1<<(slot%8)) != 0 {
			ps.backed[slot/64] |= 1 << (slot % 64)
		}
	}
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	if r.syncs.pending == nil {
		r.syncs.pending = map[string]pendingSync{}
	}
	r.syncs.pending[owner] = ps
}

// synced ends owner's full sync number gen: its backed slots count as
// held, but those whose copies went meanwhile (forgetSyncs). It reports
// false if that sync is not the one under way.
func (r *Replicator) synced(owner string, gen uint64) bool {
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	ps, ok := r.syncs.pending[owner]
	if !ok || ps.gen != gen || owner == "" {
		return false
	}
	delete(r.syncs.pending, owner)
	for slot := range cluster.Slots {
		if ps.backed.Has(slot) {
			r.syncs.from[slot] = owner
		}
	}
	return true
}

// noteSync records a full sync from owner: it dropped the copies of the
// slots in drop, and brings those of the slots in backed, the ones the
// owner's table makes this node back up (this node's table may lag
// behind the owner's: a join the owner saw first). An owner that predates
// backed says nothing of which: none counts as held.
func (r *Replicator) noteSync(owner string, drop, backed []byte) {
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	for slot := range cluster.Slots {
		bit := byte(1) << (slot % 8)
		switch {
		case backed != nil && backed[slot/8]&bit != 0 && owner != "":
			r.syncs.from[slot] = owner
		case drop[slot/8]&bit != 0:
			r.syncs.from[slot] = ""
		}
	}
}

// noteKept records that the copies KeepHanded kept of slots are their new
// owner's state: what this node handed it. Without it a new owner that
// died before its first full sync here left its slots lost on this node,
// which holds their state (TestLostSlotsAfterJoin).
func (r *Replicator) noteKept(t *cluster.Table, slots []int) {
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	for _, slot := range slots {
		r.syncs.from[slot] = t.Owner(slot).Name
	}
}

// sendSync sends RL.PEER SYNC drop backed ENDS, with LOST and lost's
// holder and bitmap pairs when there are any (see LostAt), or to a node
// that predates LOST drop backed ENDS, or to one that predates ENDS drop
// backed, or to one that predates backed drop alone: each answers a
// longer form than it knows cluster.PeerRefused, its refusal of any form
// it does not know, and only that. Any other refusal, another NOPERM or
// cluster.PeerNoReplicas say, is the node's answer to SYNC itself, which
// a shorter form would get too. A form without LOST adds the lost slots
// to backed: their keys go as before. It reports whether the sync must
// end with RL.PEER SYNCED (see endSync).
func (p *shipPeer) sendSync(node cluster.Node, drop, backed []byte, lost [][]byte) (ends bool, err error) {
	sync := []byte(cluster.PeerSync)
	forms := [][][]byte{
		{[]byte(cluster.PeerCommand), sync, drop, backed, []byte(cluster.PeerSyncEnds)},
		{[]byte(cluster.PeerCommand), sync, drop, backed},
		{[]byte(cluster.PeerCommand), sync, drop},
	}
	if len(lost) > 0 {
		withLost := append([][]byte{[]byte(cluster.PeerCommand), sync, drop, backed, []byte(cluster.PeerSyncEnds), []byte(cluster.PeerSyncLost)}, lost...)
		forms = append([][][]byte{withLost}, forms...)
	}
	for i, form := range forms {
		if len(lost) > 0 && i == 1 {
			for j := 1; j < len(lost); j += 2 {
				for k := range backed {
					backed[k] |= lost[j][k] // a backup that predates LOST: their keys go, as before
				}
			}
		}
		err = p.send(node, [][][]byte{form})
		var pe *peerError
		if i == len(forms)-1 || !errors.As(err, &pe) || pe.msg != errPeerAuth {
			return len(form) > 4 && err == nil, err
		}
	}
	return false, err
}

// endSync ends a full sync sent with ENDS, of sent bytes: the backup
// counts the slots it backs up as held from now on.
func (p *shipPeer) endSync(node cluster.Node, sent int64) error {
	return p.send(node, [][][]byte{{[]byte(cluster.PeerCommand), []byte(cluster.PeerSynced), strconv.AppendInt(nil, sent, 10)}})
}

// syncGens numbers each primary's full syncs here, so that shipments on a
// connection older than the latest full sync are refused (see shipment).
type syncGens struct {
	mu  sync.Mutex
	gen map[string]uint64 // guarded by mu: by primary, its latest full sync's number
}

// next numbers a new full sync from peer.
func (g *syncGens) next(peer string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gen == nil {
		g.gen = map[string]uint64{}
	}
	g.gen[peer]++
	return g.gen[peer]
}

// latest reports whether gen is peer's latest full sync here.
func (g *syncGens) latest(peer string, gen uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen[peer] == gen
}

// forgetSyncs forgets the syncs of the slots whose copies go.
func (r *Replicator) forgetSyncs(in func(slot int) bool) {
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	for slot := range cluster.Slots {
		if (r.syncs.from[slot] != "" || r.syncs.lost[slot].owner != "") && in(slot) {
			r.syncs.from[slot] = ""
			r.syncs.lost[slot] = lostMark{}
		}
	}
	for owner, ps := range r.syncs.pending {
		for slot := range cluster.Slots {
			if ps.backed.Has(slot) && in(slot) {
				ps.backed[slot/64] &^= 1 << (slot % 64)
			}
		}
		r.syncs.pending[owner] = ps
	}
}

// A record outlived its owner's ownership unless something dropped the
// copies. Tables deal slots out with bounded loads, so a member's death
// or join can move some of a live owner X's slots to a third node Y with
// this node their backup in both tables: X's copies stay (this node backs
// the slot up still), and so did the record "from X". Once the table gave
// the slot back to X, the record read as X's full sync of its new
// ownership: Y's seed of what it handed back (Seed) was left out, and X's
// death before its first full sync here took the slot over from X's
// copies from before Y served it (the simulation's seed 26 at an import
// wait of 1 s showed the skip, there through a cut: n3 kept n1's copies
// of slot 11822 as "from n1" while n2 served it to 135, and left n2's
// seed out once n2 handed it back to n1).

// forgetMoved forgets, for a table change from old to nt, which owner's
// full sync brought the copies of the slots nt moves off that owner: the
// copies stay, not held, until the new owner's full sync or seed replaces
// them. X's stream goes on: the slots X still owns by its own table are
// held as before, and one that X owns again is held from its next full
// sync. A full sync of X's under way that names such a slot is ended
// instead: X's connections from before are refused (-RESYNC), so that
// neither its SYNCED nor its chunks, landing after a seed, bring X's
// older keys back as held.
func (r *Replicator) forgetMoved(old, nt *cluster.Table) {
	var ended []string
	r.syncs.mu.Lock()
	for slot := range cluster.Slots {
		was := old.Owner(slot).Name
		if nt.Owner(slot).Name == was {
			continue
		}
		if r.syncs.from[slot] == was {
			r.syncs.from[slot] = ""
		}
		if ps, ok := r.syncs.pending[was]; ok && ps.backed.Has(slot) && !slices.Contains(ended, was) {
			ended = append(ended, was)
		}
	}
	for _, name := range ended {
		delete(r.syncs.pending, name)
	}
	r.syncs.mu.Unlock()
	r.syncGens.mu.Lock()
	defer r.syncGens.mu.Unlock()
	for _, name := range ended {
		if _, ok := r.syncGens.gen[name]; ok {
			r.syncGens.gen[name]++
		}
	}
}

// HeldBy reports whether this node holds slot's copies from owner's full sync.
func (r *Replicator) HeldBy(slot int, owner string) bool {
	r.syncs.mu.Lock()
	defer r.syncs.mu.Unlock()
	return r.syncs.from[slot] == owner
}

// ForgetHeld forgets which owner's full sync brought every slot's copies,
// and refuses further shipments on every primary's connection (-RESYNC):
// this node learned that it was declared dead. The owners that saw its
// death confirmed moved their slots' backups off it and shipped them
// elsewhere since, and they ship it nothing more before a full sync: its
// copies are as old as its death, and an owner that dies now would leave
// it promoting them, if its table still names it the backup (the
// simulation's seed 5: a node cut off with the minority took a slot over,
// after the heal, from copies as old as the cut). Until a full sync
// brings them again, those slots are lost here at their owner's death,
// not served stale. An owner that kept shipping to it gets -RESYNC and
// syncs it again at once.
func (r *Replicator) ForgetHeld() {
	r.syncs.mu.Lock()
	clear(r.syncs.from[:])
	clear(r.syncs.pending)
	r.syncs.mu.Unlock()
	r.syncGens.mu.Lock()
	for peer := range r.syncGens.gen {
		r.syncGens.gen[peer]++
	}
	r.syncGens.mu.Unlock()
}

// endStreams ends the shipments of the members that v shows dead since
// old: each one's connections are refused (-RESYNC) until a full sync,
// which waits for its lease. Its slots are served elsewhere from its
// death on; what it ships on a connection from before, once it runs
// again (a pause, a cut), are changes from before its death, and they
// would land on copies newer than they are: those this node kept of what
// it handed back to it (KeepHanded), which its death would promote (the
// simulation's seed 3138: 10 promoted where 61 was handed back).
func (r *Replicator) endStreams(old *cluster.Table, v *cluster.View) {
	var dead []string
	for _, m := range old.Nodes() {
		if m.Name != r.self && !v.Table.Has(m.Name) && died(v, m.Name) {
			dead = append(dead, m.Name)
		}
	}
	if len(dead) == 0 {
		return
	}
	r.syncs.mu.Lock()
	for _, name := range dead {
		delete(r.syncs.pending, name)
	}
	r.syncs.mu.Unlock()
	r.syncGens.mu.Lock()
	defer r.syncGens.mu.Unlock()
	for _, name := range dead {
		if _, ok := r.syncGens.gen[name]; ok {
			r.syncGens.gen[name]++
		}
	}
}
