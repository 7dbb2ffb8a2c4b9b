package server

import (
	"io"
	"time"
)

// handoffPairs are the handoff's counters for RL.CLUSTER INFO and INFO
// cluster: slots, keys and bytes this node moved in and out, the moves
// under way, and how long its last migration out took to its cut.
func (s *Server) handoffPairs() []pair {
	h := &s.cl.ho
	in, out := h.moving()
	st := &h.stats
	return []pair{
		{"handoff_slots_in", st.slotsIn.Load()}, {"handoff_slots_out", st.slotsOut.Load()},
		{"handoff_keys_in", st.keysIn.Load()}, {"handoff_keys_out", st.keysOut.Load()},
		{"handoff_bytes_in", st.bytesIn.Load()}, {"handoff_bytes_out", st.bytesOut.Load()},
		{"handoff_moves_in_progress", st.moving.Load()},
		{"handoff_slots_importing", in}, {"handoff_slots_migrating", out},
		{"handoff_last_move_usec", st.lastMoveUsec.Load()},
		{"handoff_import_timeouts", st.importTimeouts.Load()},
		{"handoff_crossed_cut", st.crossedCut.Load()},
	}
}

// writeHandoffMetrics writes the same to /metrics.
func (s *Server) writeHandoffMetrics(w io.Writer) {
	h := &s.cl.ho
	st := &h.stats
	in, out := h.moving()
	counter(w, `rlstore_cluster_handoff_slots_total{direction="in"}`, st.slotsIn.Load())
	counter(w, `rlstore_cluster_handoff_slots_total{direction="out"}`, st.slotsOut.Load())
	counter(w, `rlstore_cluster_handoff_keys_total{direction="in"}`, st.keysIn.Load())
	counter(w, `rlstore_cluster_handoff_keys_total{direction="out"}`, st.keysOut.Load())
	counter(w, `rlstore_cluster_handoff_bytes_total{direction="in"}`, st.bytesIn.Load())
	counter(w, `rlstore_cluster_handoff_bytes_total{direction="out"}`, st.bytesOut.Load())
	gauge(w, "rlstore_cluster_handoff_moves_in_progress", float64(st.moving.Load()))
	gauge(w, `rlstore_cluster_handoff_slots_moving{direction="in"}`, float64(in))
	gauge(w, `rlstore_cluster_handoff_slots_moving{direction="out"}`, float64(out))
	gauge(w, "rlstore_cluster_handoff_last_move_seconds", (time.Duration(st.lastMoveUsec.Load()) * time.Microsecond).Seconds())
	counter(w, "rlstore_cluster_handoff_import_timeouts_total", st.importTimeouts.Load())
	counter(w, "rlstore_cluster_handoff_crossed_cut_total", st.crossedCut.Load())
}
