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
		ft.peers[i] = r.peers[n.Name]
	}
	r.fresh.Store(ft)
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
