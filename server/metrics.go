package server

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/durable"
	"github.com/rlstore/rlstore/server/internal/observe"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// WriteMetrics writes the server's metrics to w in Prometheus's text format,
// for /metrics. Every figure is read at the scrape from counters the server
// keeps anyway (atomics of its own, the store's per-shard stats), so
// recording costs the command path nothing beyond those atomics. Go
// runtime and process metrics follow, from VictoriaMetrics/metrics.
func (s *Server) WriteMetrics(w io.Writer) {
	s.writeDecisionMetrics(w)
	s.writePolicyMetrics(w)
	s.writeCommandMetrics(w)
	s.writeStoreMetrics(w)
	s.writeConnMetrics(w)
	s.writePersistenceMetrics(w)
	s.writeClusterMetrics(w)
	for _, f := range s.extraMetrics() {
		f(w)
	}
	vm.WriteProcessMetrics(w)
}

// AddMetrics adds a writer of more metrics to /metrics, such as a cluster's.
func (s *Server) AddMetrics(write func(w io.Writer)) {
	s.life.Lock()
	defer s.life.Unlock()
	s.metricWriters = append(s.metricWriters, write)
}

func (s *Server) extraMetrics() []func(io.Writer) {
	s.life.Lock()
	defer s.life.Unlock()
	return s.metricWriters
}

func (s *Server) writeDecisionMetrics(w io.Writer) {
	for slot := range decide.SlotReserve + 1 { // then the settlements (writeSettleMetrics)
		v := &s.dec.Counts[slot]
		name := decide.SlotName(slot)
		counter(w, `rlstore_decisions_total{command="`+name+`",result="allowed"}`, v.Allowed.Load())
		counter(w, `rlstore_decisions_total{command="`+name+`",result="denied"}`, v.Denied.Load())
	}
	st := s.cfg.Store.Stats()
	counter(w, "rlstore_shadow_denied_total", st.Shadowed)
	counter(w, "rlstore_decision_errors_total", st.Errors)
	s.writeSettleMetrics(w, st)
}

// writeSettleMetrics writes rlstore_settlements_total, and the leases and
// reservations that ran out (the store's st), which no command settled.
func (s *Server) writeSettleMetrics(w io.Writer, st shard.Stats) {
	for slot := decide.SlotRenew; slot < decide.Slots; slot++ {
		v := &s.dec.Counts[slot]
		l := `rlstore_settlements_total{command="` + decide.SlotName(slot)
		counter(w, l+`",result="live"}`, v.Allowed.Load())
		counter(w, l+`",result="ended"}`, v.Denied.Load())
	}
	counter(w, "rlstore_leases_expired_total", st.LeasesExpired)
	counter(w, "rlstore_reservations_expired_total", st.ReservationsExpired)
}

// writePolicyMetrics labels by policy name, never by key: there are as many
// series as policies and rules.
func (s *Server) writePolicyMetrics(w io.Writer) {
	s.pol.Each(func(name string, p *policy.Policy, ps *decide.PolicyStats) {
		l := `policy="` + labelValue(name) + `"`
		counter(w, `rlstore_policy_decisions_total{`+l+`,result="allowed"}`, ps.Allowed.Load())
		counter(w, `rlstore_policy_decisions_total{`+l+`,result="denied"}`, ps.Denied.Load())
		counter(w, `rlstore_policy_shadow_denied_total{`+l+`}`, ps.ShadowDenied.Load())
		if p != nil {
			for i := range p.Rules {
				counter(w, `rlstore_policy_rule_denied_total{`+l+`,rule="`+strconv.Itoa(i)+`"}`, ps.RuleDenied[i].Load())
			}
		}
	})
}

func (s *Server) writeCommandMetrics(w io.Writer) {
	for _, n := range observe.CommandStats(s.table) {
		l := `command="` + labelValue(n.Name) + `"`
		counter(w, `rlstore_commands_total{`+l+`}`, n.Stats.Calls.Load())
		counter(w, `rlstore_commands_rejected_total{`+l+`}`, n.Stats.Rejected.Load())
		counter(w, `rlstore_commands_failed_total{`+l+`}`, n.Stats.Failed.Load())
		histogram(w, "rlstore_command_duration_seconds", l, n.Stats)
	}
}

func (s *Server) writeStoreMetrics(w io.Writer) {
	st := s.cfg.Store.Stats()
	gauge(w, "rlstore_keys", float64(st.Keys))
	gauge(w, "rlstore_key_bytes", float64(st.Bytes))
	gauge(w, "rlstore_maxmemory_bytes", float64(s.cfg.Store.MaxMemory()))
	counter(w, "rlstore_sweeps_total", st.Sweeps)
	counter(w, "rlstore_swept_keys_total", st.Swept)
	counter(w, "rlstore_index_rebuilds_total", st.Rebuilds)
	s.writeKindMetrics(w)
}

// writeKindMetrics writes keys and their bytes per algorithm, every named
// kind always, so a kind with no keys reads 0 rather than vanishing. They
// take each shard's lock in turn, briefly, at the scrape only.
func (s *Server) writeKindMetrics(w io.Writer) {
	ks := s.cfg.Store.KindStats()
	for k, st := range ks {
		name := window.Kind(k).String()
		if name == "none" {
			continue
		}
		gauge(w, `rlstore_keys_by_kind{kind="`+name+`"}`, float64(st.Keys))
		gauge(w, `rlstore_key_bytes_by_kind{kind="`+name+`"}`, float64(st.Bytes))
	}
}

func (s *Server) writeConnMetrics(w io.Writer) {
	gauge(w, "rlstore_connections", float64(s.clients.Len()))
	gauge(w, "rlstore_maxclients", float64(s.maxClients.Load()))
	var accepted, rejected int64
	if ln := s.listener(); ln != nil {
		accepted, rejected = ln.Accepted.Load(), ln.Rejected.Load()
	}
	counter(w, "rlstore_connections_total", accepted)
	counter(w, "rlstore_connections_rejected_total", rejected)
	counter(w, "rlstore_protocol_errors_total", s.protoErrors.Load())
	counter(w, "rlstore_auth_failures_total", s.users.Failures())
}

func (s *Server) writePersistenceMetrics(w io.Writer) {
	gauge(w, "rlstore_persistence_enabled", boolFloat(s.cfg.Durability != nil))
	if s.cfg.Durability == nil {
		return
	}
	st := s.cfg.Durability.Stats()
	gauge(w, "rlstore_persistence_last_save_timestamp_seconds", float64(durable.UnixOrZero(st.LastSave)))
	gauge(w, "rlstore_persistence_last_save_duration_seconds", st.LastSaveDuration.Seconds())
	gauge(w, "rlstore_persistence_last_save_ok", boolFloat(st.LastSaveErr == nil))
	counter(w, "rlstore_persistence_saves_total", st.Saves)
	gauge(w, "rlstore_persistence_snapshot_bytes", float64(st.SnapshotBytes))
	gauge(w, "rlstore_persistence_log_bytes", float64(st.LogBytes))
	gauge(w, "rlstore_persistence_changes_since_save", float64(st.ChangesLogged))
	gauge(w, "rlstore_persistence_fsync_lag_seconds", st.FsyncLag.Seconds())
	gauge(w, "rlstore_persistence_last_fsync_timestamp_seconds", float64(durable.UnixOrZero(st.LastFsync)))
	counter(w, "rlstore_persistence_write_errors_total", st.LogWriteErrors)
	gauge(w, "rlstore_persistence_misconf", boolFloat(st.Err != nil))
	counter(w, "rlstore_persistence_failed_commits_total", s.dur.Stats().FailedCommits)
	histogram(w, "rlstore_persistence_commit_duration_seconds", "", s.dur.Commits())
	fsyncHistogram(w, `file="log"`, st.LogFsyncs)
	fsyncHistogram(w, `file="snapshot"`, st.SnapshotFsyncs)
}

// fsyncHistogram writes the fsync latency persistence recorded for one kind
// of file, and its failures. Persistence keeps the buckets as atomics of
// its own; they are read here, at the scrape.
func fsyncHistogram(w io.Writer, labels string, fs persistence.FsyncStats) {
	const name = "rlstore_persistence_fsync_duration_seconds"
	var cum int64
	for i, n := range fs.Buckets {
		cum += n
		le := "+Inf"
		if b := persistence.FsyncBound(i); b > 0 {
			le = strconv.FormatFloat(b.Seconds(), 'g', -1, 64)
		}
		fmt.Fprintf(w, "%s_bucket{%s,le=%q} %d\n", name, labels, le, cum)
	}
	fmt.Fprintf(w, "%s_sum{%s} %g\n", name, labels, fs.Total.Seconds())
	fmt.Fprintf(w, "%s_count{%s} %d\n", name, labels, cum)
	counter(w, "rlstore_persistence_fsync_errors_total{"+labels+"}", fs.Errors)
}

func (s *Server) writeClusterMetrics(w io.Writer) {
	gauge(w, "rlstore_cluster_enabled", boolFloat(s.ho != nil))
	if s.ho == nil {
		return
	}
	v := s.ho.View()
	gauge(w, "rlstore_cluster_members", float64(len(v.Members)))
	gauge(w, "rlstore_cluster_owners", float64(len(v.Table.Nodes())))
	gauge(w, "rlstore_cluster_slots_owned", float64(route.SlotsOwned(v)))
	st := s.rt.Stats()
	counter(w, "rlstore_cluster_forwarded_total", st.Forwarded)
	counter(w, "rlstore_cluster_owner_unreachable_total", st.Unreachable)
	s.rt.EachPeer(func(name string, forwarded, errors int64) {
		l := `peer="` + labelValue(name) + `"`
		counter(w, "rlstore_cluster_peer_forwarded_total{"+l+"}", forwarded)
		counter(w, "rlstore_cluster_peer_forward_errors_total{"+l+"}", errors)
	})
	s.writeHandoffMetrics(w)
	s.writeReplicaMetrics(w)
}

// Ready returns nil when the server is serving clients: loaded (New has
// read the policies, and cmd/rlstore the data, before Serve), listening,
// not draining, its persistence healthy, in a cluster a member; and every
// check added with AddReadyCheck passes.
func (s *Server) Ready() error {
	s.life.Lock()
	ln, stopping, checks := s.ln, s.stopping, s.readyChecks
	s.life.Unlock()
	switch {
	case stopping:
		return errors.New("shutting down")
	case ln == nil:
		return errors.New("not listening yet")
	}
	if s.cfg.Durability != nil {
		if err := s.cfg.Durability.Err(); err != nil {
			return fmt.Errorf("persistence failing: %w", err)
		}
	}
	if s.ho != nil {
		if v := s.ho.View(); v != nil {
			if _, ok := v.Member(v.Self); !ok {
				return errors.New("not a member of the cluster")
			}
			if v.Waiting {
				return errors.New("has not met a member of its cluster yet")
			}
		}
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// AddReadyCheck adds a condition of Ready, such as being a cluster member.
func (s *Server) AddReadyCheck(check func() error) {
	s.life.Lock()
	defer s.life.Unlock()
	s.readyChecks = append(s.readyChecks, check)
}

func counter(w io.Writer, name string, v int64) { vm.WriteCounterUint64(w, name, uint64(max(v, 0))) }

func gauge(w io.Writer, name string, v float64) { vm.WriteGaugeFloat64(w, name, v) }

// histogram writes st's latency buckets as a Prometheus histogram in
// seconds. labels, if any, go before le.
func histogram(w io.Writer, name, labels string, st *core.Stats) {
	if labels != "" {
		labels += ","
	}
	var cum int64
	for i := range st.Buckets {
		cum += st.Buckets[i].Load()
		le := "+Inf"
		if i < len(core.Bounds) {
			le = strconv.FormatFloat(float64(core.Bounds[i])/1e6, 'g', -1, 64)
		}
		fmt.Fprintf(w, "%s_bucket{%sle=%q} %d\n", name, labels, le, cum)
	}
	braces := ""
	if labels != "" {
		braces = "{" + strings.TrimSuffix(labels, ",") + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %g\n", name, braces, float64(st.Usec.Load())*float64(time.Microsecond)/float64(time.Second))
	fmt.Fprintf(w, "%s_count%s %d\n", name, braces, cum)
}

// labelValue escapes v for a Prometheus label value.
func labelValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// writeReplicaMetrics writes the replica figures to /metrics.
func (s *Server) writeReplicaMetrics(w io.Writer) {
	if s.repl == nil {
		return
	}
	r := s.repl
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

// writeHandoffMetrics writes the handoff's counters (handoff.Stats) to /metrics.
func (s *Server) writeHandoffMetrics(w io.Writer) {
	st := s.ho.Stats()
	counter(w, `rlstore_cluster_handoff_slots_total{direction="in"}`, st.SlotsIn)
	counter(w, `rlstore_cluster_handoff_slots_total{direction="out"}`, st.SlotsOut)
	counter(w, `rlstore_cluster_handoff_keys_total{direction="in"}`, st.KeysIn)
	counter(w, `rlstore_cluster_handoff_keys_total{direction="out"}`, st.KeysOut)
	counter(w, `rlstore_cluster_handoff_bytes_total{direction="in"}`, st.BytesIn)
	counter(w, `rlstore_cluster_handoff_bytes_total{direction="out"}`, st.BytesOut)
	gauge(w, "rlstore_cluster_handoff_moves_in_progress", float64(st.Moves))
	gauge(w, `rlstore_cluster_handoff_slots_moving{direction="in"}`, float64(st.Importing))
	gauge(w, `rlstore_cluster_handoff_slots_moving{direction="out"}`, float64(st.Migrating))
	gauge(w, "rlstore_cluster_handoff_last_move_seconds", st.LastMove.Seconds())
	counter(w, "rlstore_cluster_handoff_import_timeouts_total", st.ImportTimeouts)
	counter(w, "rlstore_cluster_handoff_crossed_cut_total", st.CrossedCut)
	gauge(w, "rlstore_cluster_handoff_import_slots_stuck", float64(st.ImportsStuck))
	gauge(w, "rlstore_cluster_handoff_import_longest_wait_seconds", st.LongestImport.Seconds())
	counter(w, "rlstore_cluster_handoff_imports_ended_by_operator_total", st.ImportsEnded)
}
