package replica

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
)

// An owner serves a slot only while the slot's backup holds its state to
// within Config.MaxLag: while the backup has acknowledged, within MaxLag,
// a shipment (or a heartbeat, or a full sync) that carries every change
// made before some moment, and that moment is less than MaxLag ago. So
// when the owner stops (a crash, a pause, a partition), the copies the
// backup promotes lack at most MaxLag of its decisions, whatever stopped
// the shipments before: a cut link between the two only (red-team R2), a
// paused or overloaded backup, a queue dropped for a full sync that cannot
// reach it. Without it the backup counted its copies as held from its last
// full sync on, and took a slot over from copies as old as the cut: every
// key of it admitted its limit again. Redis's min-replicas-max-lag makes a
// master refuse writes for the same reason.
//
// The check on the request path is Fresh: an atomic load of this table
// and one of the backup's deadline, compared with the command's time on
// Delegate.Mono's clock. Acknowledgements move the deadlines from the
// shipping goroutines only.

// freshTable maps each slot this node owns to its backup's shipPeer, for
// Fresh. It is replaced whole at every table change (OnTable).
type freshTable struct {
	backupOf *[cluster.Slots]uint16 // index in peers; noBackup for a slot not owned here, or with no backup
	peers    []*shipPeer            // by index in the table's Nodes(); nil for this node
	// former holds, per slot, the deadline of copies a former backup may
	// still hold (see noteFormerLocked); 0 for none. Nil when no slot has any.
	former *[cluster.Slots]int64
}

// Fresh reports whether this node may serve slot, which it owns, at now
// (Delegate.Mono's clock) as far as its backup is concerned: the backup
// holds the slot's state as of less than MaxLag before now. A slot with no
// backup (one member), or MaxLag zero (replicas off), is always fresh.
func (r *Replicator) Fresh(slot int, now int64) bool {
	ft := r.fresh.Load()
	if ft == nil {
		return true
	}
	if f := ft.former; f != nil && f[slot] != 0 && now >= f[slot] {
		return false
	}
	b := ft.backupOf[slot]
	if b == noBackup {
		return true
	}
	return now < ft.peers[b].freshUntil.Load()
}

// storeFreshLocked publishes the table Fresh reads, for the table and
// peers this node has now. The caller holds r.mu.
func (r *Replicator) storeFreshLocked() {
	if r.cfg.MaxLag <= 0 {
		return
	}
	nodes := r.table.Nodes()
	ft := &freshTable{backupOf: r.backupOf, peers: make([]*shipPeer, len(nodes))}
	for i, n := range nodes {
		p := r.peers[n.Name]
		ft.peers[i] = p
		if p == nil || p.former == (SlotBits{}) {
			continue
		}
		if ft.former == nil {
			ft.former = new([cluster.Slots]int64)
		}
		for s := range cluster.Slots {
			if p.former.Has(s) && (ft.former[s] == 0 || p.formerUntil < ft.former[s]) {
				ft.former[s] = p.formerUntil
			}
		}
	}
	r.fresh.Store(ft)
}

// A backup's table can lag behind its owner's. When the owner X's table
// moves a slot's backup from Y to Z, Y keeps its copies of the slot, and
// counts them as held (HeldBy), until X's "no longer backup" full sync
// drops them; should Y's own table still name it the slot's backup when
// X dies, Y takes the slot over from them. X ships the slot's changes to
// Z meanwhile, so Y's copies are only as new as Y's last acknowledgement
// before the move: X serves the slot only until MaxLag after that (Y's
// deadline then, frozen), unless Y acknowledged the drop first. The
// simulation found it (seed 5: a promotion 35 behind the last admission).

// noteFormerLocked records, for a table change from old to nt, the slots
// this node owns in both whose backup moved off a node still in nt. The
// caller holds r.mu, and applies nt next.
func (r *Replicator) noteFormerLocked(old, nt *cluster.Table) {
	if old == nil || r.cfg.MaxLag <= 0 {
		return
	}
	for _, p := range r.peers {
		if p.former == (SlotBits{}) {
			continue
		}
		for s := range cluster.Slots {
			if p.former.Has(s) && nt.Owner(s).Name != r.self {
				p.former[s/64] &^= 1 << (s % 64) // not served here: Fresh does not ask
			}
		}
	}
	for s := range cluster.Slots {
		if old.Owner(s).Name != r.self || nt.Owner(s).Name != r.self {
			continue
		}
		ob, ok := old.RunnerUp(s)
		if !ok {
			continue
		}
		if b, ok := nt.RunnerUp(s); ok && b.Name == ob.Name {
			continue
		}
		p := r.peers[ob.Name]
		if p == nil || !nt.Has(ob.Name) {
			continue // gone from the table: see docs/cluster.md, D
		}
		if p.former == (SlotBits{}) {
			p.formerUntil = p.freshUntil.Load()
		}
		p.former[s/64] |= 1 << (s % 64)
	}
}

// droppedFormer forgets the former slots of p's that a full sync's drop,
// acknowledged, reached: former as it was when the sync began.
func (r *Replicator) droppedFormer(p *shipPeer, former *SlotBits, drop []byte) {
	if *former == (SlotBits{}) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range cluster.Slots {
		if former.Has(s) && drop[s/8]&(1<<(s%8)) != 0 {
			p.former[s/64] &^= 1 << (s % 64)
		}
	}
	if r.table != nil {
		r.storeFreshLocked()
	}
}

// extendFresh lets this node serve the backup's slots until asOf + MaxLag:
// the backup has acknowledged every change made before asOf (Delegate.Mono's
// clock).
func (p *shipPeer) extendFresh(asOf int64) {
	until := asOf + int64(p.r.cfg.MaxLag)
	for {
		cur := p.freshUntil.Load()
		if until <= cur || p.freshUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// freshLeft is how long this node may still serve the slots p backs up
// without another acknowledgement (negative: not served now), for INFO.
func (p *shipPeer) freshLeft() time.Duration {
	if p.r.cfg.MaxLag <= 0 {
		return 0
	}
	return time.Duration(p.freshUntil.Load() - p.r.d.Mono())
}
