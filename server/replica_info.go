package server

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// shipStats is one backup's shipping figures, for INFO and /metrics.
type shipStats struct {
	name, addr            string
	bytes, batches, fulls int64
	failures, dropped     int64
	misses                int64 // keys whose deltas the backup could not complete
	lag                   time.Duration
	lastShip              time.Time
	synced, deltas        bool
}

// stats returns the figures of every backup, sorted by name.
func (r *replicator) stats() []shipStats {
	r.mu.Lock()
	peers := make([]*shipPeer, 0, len(r.peers))
	for _, p := range r.peers {
		peers = append(peers, p)
	}
	r.mu.Unlock()
	now := time.Now()
	out := make([]shipStats, 0, len(peers))
	for _, p := range peers {
		out = append(out, p.stats(now))
	}
	slices.SortFunc(out, func(a, b shipStats) int { return strings.Compare(a.name, b.name) })
	return out
}

func (p *shipPeer) stats(now time.Time) shipStats {
	p.mu.Lock()
	st := shipStats{name: p.node.Name, addr: p.node.Addr, synced: p.synced && !p.full, deltas: p.deltas}
	oldest := p.since
	p.mu.Unlock()
	st.bytes, st.batches, st.fulls = p.bytes.Load(), p.batches.Load(), p.fulls.Load()
	st.failures, st.dropped, st.misses = p.failures.Load(), p.dropped.Load(), p.misses.Load()
	if t := p.lastShip.Load(); t != 0 {
		st.lastShip = time.Unix(0, t)
	}
	if f := p.inFlight.Load(); f != 0 && (oldest.IsZero() || f < oldest.UnixNano()) {
		oldest = time.Unix(0, f)
	}
	switch {
	case !st.synced && !st.lastShip.IsZero():
		st.lag = now.Sub(st.lastShip) // not shipping: behind by all since the last shipment
	case !oldest.IsZero():
		st.lag = now.Sub(oldest)
	default:
		st.lag = time.Duration(p.lagNs.Load())
	}
	return st
}

// infoReplication is INFO replication: in a cluster with replicas every
// node is the primary of its slots and the backup of others', so the role
// is master. A backup is no Redis replica (CLUSTER NODES shows none), so
// connected_slaves is 0 and the backups are listed as rl_backups and
// rl_backup0, rl_backup1, ….
func (s *Server) infoReplication() []pair {
	if s.cl == nil || s.cl.repl == nil {
		return []pair{{"role", "master"}, {"connected_slaves", 0}, {"rl_replicas", 0}}
	}
	r := s.cl.repl
	st := r.stats()
	ps := []pair{{"role", "master"}, {"connected_slaves", 0}, {"rl_replicas", 1}, {"rl_backups", len(st)},
		{"rl_replica_interval_ms", r.cfg.Interval.Milliseconds()},
		{"rl_copies", r.copiesLen()}, {"rl_copies_refused", r.copyErrs.Load()},
		{"rl_copies_promoted", r.promoted.Load()}, {"rl_copies_received_bytes", r.received.Load()},
		{"rl_copies_deltas_missed", r.missed.Load()}}
	for i, p := range st {
		last := int64(0)
		if !p.lastShip.IsZero() {
			last = p.lastShip.UnixMilli()
		}
		state := "online"
		if !p.synced {
			state = "full_sync_due"
		}
		host, port := splitAddr(p.addr)
		ps = append(ps, pair{"rl_backup" + strconv.Itoa(i), "name=" + p.name + ",ip=" + host + ",port=" + strconv.Itoa(port) +
			",state=" + state + ",shipped_bytes=" + strconv.FormatInt(p.bytes, 10) +
			",shipments=" + strconv.FormatInt(p.batches, 10) + ",lag_ms=" + strconv.FormatInt(p.lag.Milliseconds(), 10) +
			",last_ship_ms=" + strconv.FormatInt(last, 10) + ",full_syncs=" + strconv.FormatInt(p.fulls, 10) +
			",failures=" + strconv.FormatInt(p.failures, 10) + ",deltas=" + strconv.Itoa(int(boolFloat(p.deltas))) +
			",delta_misses=" + strconv.FormatInt(p.misses, 10)})
	}
	return ps
}

// writeReplicaMetrics writes the replica figures to /metrics.
func (s *Server) writeReplicaMetrics(w io.Writer) {
	if s.cl == nil || s.cl.repl == nil {
		return
	}
	r := s.cl.repl
	gauge(w, "rlstore_replica_copies", float64(r.copiesLen()))
	counter(w, "rlstore_replica_copies_refused_total", r.copyErrs.Load())
	counter(w, "rlstore_replica_copies_promoted_total", r.promoted.Load())
	counter(w, "rlstore_replica_received_bytes_total", r.received.Load())
	for _, p := range r.stats() {
		l := `{peer="` + labelValue(p.name) + `"}`
		counter(w, "rlstore_replica_shipped_bytes_total"+l, p.bytes)
		counter(w, "rlstore_replica_shipments_total"+l, p.batches)
		counter(w, "rlstore_replica_full_syncs_total"+l, p.fulls)
		counter(w, "rlstore_replica_ship_failures_total"+l, p.failures)
		gauge(w, "rlstore_replica_lag_seconds"+l, p.lag.Seconds())
		if !p.lastShip.IsZero() {
			gauge(w, "rlstore_replica_last_shipment_timestamp_seconds"+l, float64(p.lastShip.UnixNano())/1e9)
		}
		gauge(w, "rlstore_replica_synced"+l, boolFloat(p.synced))
	}
}
