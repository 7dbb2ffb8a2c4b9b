package server

import (
	"io"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// ReplicaConfig turns on replicas for a cluster node: every slot's owner
// ships its changed keys to the slot's runner-up (cluster.Table.RunnerUp),
// which keeps them as copies, not served, and promotes them into its store
// when it takes the slot over from an owner that died. See replica.Config.
type ReplicaConfig = replica.Config

// DefaultReplicaInterval is --replica-interval's default: a crash loses at
// most this much of each key's decisions.
const DefaultReplicaInterval = replica.DefaultInterval

// replicaDelegate is what the replicator asks of this node (replica.Delegate).
type replicaDelegate struct{ s *Server }

func (d replicaDelegate) View() *cluster.View { return d.s.cl.view() }
func (d replicaDelegate) UnixNano() int64     { return d.s.unixNano() }

// Mono is the lease's clock, which mayServe compares Fresh's deadlines with.
func (d replicaDelegate) Mono() int64 {
	if l := d.s.cl.lease; l != nil {
		return l.Now()
	}
	return int64(time.Since(d.s.started))
}

func (d replicaDelegate) Importing() bool {
	in, _ := d.s.cl.ho.moving()
	return in > 0
}

// startReplicas starts shipping, if replicas are on, and returns the stop
// of every background task: shipping first, then stop's.
func (s *Server) startReplicas(stop func()) func() {
	if s.cl == nil || s.cl.repl == nil {
		return stop
	}
	r := s.cl.repl
	r.Start()
	return func() {
		r.Close()
		stop()
	}
}

// infoReplication is INFO replication: in a cluster with replicas every
// node is the primary of its slots and the backup of others', so the role
// is master. A backup is no Redis replica (CLUSTER NODES shows none), so
// connected_slaves is 0 and the backups are listed as rl_backups and
// rl_backup0, rl_backup1, ….
func (s *Server) infoReplication() []core.Pair {
	if s.cl == nil || s.cl.repl == nil {
		return []core.Pair{{Key: "role", Val: "master"}, {Key: "connected_slaves", Val: 0}, {Key: "rl_replicas", Val: 0}}
	}
	r := s.cl.repl
	st, n := r.Stats(), r.Counts()
	ps := []core.Pair{{Key: "role", Val: "master"}, {Key: "connected_slaves", Val: 0}, {Key: "rl_replicas", Val: 1}, {Key: "rl_backups", Val: len(st)},
		{Key: "rl_replica_interval_ms", Val: r.Interval().Milliseconds()},
		{Key: "rl_copies", Val: n.Copies}, {Key: "rl_copies_refused", Val: n.Refused},
		{Key: "rl_copies_promoted", Val: n.Promoted}, {Key: "rl_copies_received_bytes", Val: n.Received},
		{Key: "rl_copies_deltas_missed", Val: n.Missed}}
	for i, p := range st {
		last := int64(0)
		if !p.LastShip.IsZero() {
			last = p.LastShip.UnixMilli()
		}
		state := "online"
		if !p.Synced {
			state = "full_sync_due"
		}
		host, port := splitAddr(p.Addr)
		ps = append(ps, core.Pair{Key: "rl_backup" + strconv.Itoa(i), Val: "name=" + p.Name + ",ip=" + host + ",port=" + strconv.Itoa(port) +
			",state=" + state + ",shipped_bytes=" + strconv.FormatInt(p.Bytes, 10) +
			",shipments=" + strconv.FormatInt(p.Batches, 10) + ",lag_ms=" + strconv.FormatInt(p.Lag.Milliseconds(), 10) +
			",last_ship_ms=" + strconv.FormatInt(last, 10) + ",full_syncs=" + strconv.FormatInt(p.Fulls, 10) +
			",failures=" + strconv.FormatInt(p.Failures, 10) + ",deltas=" + strconv.Itoa(int(boolFloat(p.Deltas))) +
			",delta_misses=" + strconv.FormatInt(p.Misses, 10) + ",serving_ms=" + strconv.FormatInt(max(0, p.Serving.Milliseconds()), 10)})
	}
	return ps
}

// writeReplicaMetrics writes the replica figures to /metrics.
func (s *Server) writeReplicaMetrics(w io.Writer) {
	if s.cl == nil || s.cl.repl == nil {
		return
	}
	r := s.cl.repl
	n := r.Counts()
	gauge(w, "rlstore_replica_copies", float64(n.Copies))
	counter(w, "rlstore_replica_copies_refused_total", n.Refused)
	counter(w, "rlstore_replica_copies_promoted_total", n.Promoted)
	counter(w, "rlstore_replica_received_bytes_total", n.Received)
	for _, p := range r.Stats() {
		l := `{peer="` + labelValue(p.Name) + `"}`
		counter(w, "rlstore_replica_shipped_bytes_total"+l, p.Bytes)
		counter(w, "rlstore_replica_shipments_total"+l, p.Batches)
		counter(w, "rlstore_replica_full_syncs_total"+l, p.Fulls)
		counter(w, "rlstore_replica_ship_failures_total"+l, p.Failures)
		gauge(w, "rlstore_replica_lag_seconds"+l, p.Lag.Seconds())
		if !p.LastShip.IsZero() {
			gauge(w, "rlstore_replica_last_shipment_timestamp_seconds"+l, float64(p.LastShip.UnixNano())/1e9)
		}
		gauge(w, "rlstore_replica_synced"+l, boolFloat(p.Synced))
		gauge(w, "rlstore_replica_serving_seconds"+l, max(0, p.Serving.Seconds()))
	}
}
