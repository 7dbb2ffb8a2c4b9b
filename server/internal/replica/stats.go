package replica

import (
	"slices"
	"strings"
	"time"
)

// ShipStats is one backup's shipping figures, for INFO and /metrics.
type ShipStats struct {
	Name, Addr            string
	Bytes, Batches, Fulls int64
	Failures, Dropped     int64
	Misses                int64 // keys whose deltas the backup could not complete
	// Serving is how long this node may still serve the slots the backup
	// backs up without another acknowledgement (see Fresh); zero or less
	// when it does not serve them now, zero without MaxLag.
	Serving        time.Duration
	Lag            time.Duration
	LastShip       time.Time
	Synced, Deltas bool
}

// Stats returns the figures of every backup, sorted by name.
func (r *Replicator) Stats() []ShipStats {
	r.mu.Lock()
	peers := make([]*shipPeer, 0, len(r.peers))
	for _, p := range r.peers {
		peers = append(peers, p)
	}
	r.mu.Unlock()
	now := time.Now()
	out := make([]ShipStats, 0, len(peers))
	for _, p := range peers {
		out = append(out, p.stats(now))
	}
	slices.SortFunc(out, func(a, b ShipStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (p *shipPeer) stats(now time.Time) ShipStats {
	p.mu.Lock()
	st := ShipStats{Name: p.node.Name, Addr: p.node.Addr, Synced: p.synced && !p.full, Deltas: p.deltas}
	oldest := p.since
	p.mu.Unlock()
	st.Bytes, st.Batches, st.Fulls = p.bytes.Load(), p.batches.Load(), p.fulls.Load()
	st.Failures, st.Dropped, st.Misses = p.failures.Load(), p.dropped.Load(), p.misses.Load()
	st.Serving = p.freshLeft()
	if t := p.lastShip.Load(); t != 0 {
		st.LastShip = time.Unix(0, t)
	}
	if f := p.inFlight.Load(); f != 0 && (oldest.IsZero() || f < oldest.UnixNano()) {
		oldest = time.Unix(0, f)
	}
	switch {
	case !st.Synced && !st.LastShip.IsZero():
		st.Lag = now.Sub(st.LastShip) // not shipping: behind by all since the last shipment
	case !oldest.IsZero():
		st.Lag = now.Sub(oldest)
	default:
		st.Lag = time.Duration(p.lagNs.Load())
	}
	return st
}

// Counts are the backup side's figures, for INFO and /metrics.
type Counts struct {
	Copies   int64 // copies held
	Refused  int64 // copies refused by the copies map (full)
	Promoted int64 // copies promoted into the store
	Received int64 // bytes of shipments received
	Missed   int64 // deltas received that no copy could complete
	Seeded   int64 // slots whose copies an old owner's seed brought (see Seed)
}

// Counts returns the backup side's figures.
func (r *Replicator) Counts() Counts {
	return Counts{Copies: r.cfg.Copies.Len(), Refused: r.copyErrs.Load(), Promoted: r.promoted.Load(),
		Received: r.received.Load(), Missed: r.missed.Load(), Seeded: r.seeded.Load()}
}

// Interval is how often changes are shipped (Config.Interval).
func (r *Replicator) Interval() time.Duration { return r.cfg.Interval }
