package server

import (
	"io"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// handoffPairs are the handoff's counters for RL.CLUSTER INFO and INFO
// cluster: slots, keys and bytes this node moved in and out, the moves
// under way, and how long its last migration out took to its cut.
func (s *Server) handoffPairs() []core.Pair {
	h := &s.cl.ho
	in, out := h.moving()
	st := &h.stats
	return []core.Pair{
		{Key: "handoff_slots_in", Val: st.slotsIn.Load()}, {Key: "handoff_slots_out", Val: st.slotsOut.Load()},
		{Key: "handoff_keys_in", Val: st.keysIn.Load()}, {Key: "handoff_keys_out", Val: st.keysOut.Load()},
		{Key: "handoff_bytes_in", Val: st.bytesIn.Load()}, {Key: "handoff_bytes_out", Val: st.bytesOut.Load()},
		{Key: "handoff_moves_in_progress", Val: st.moving.Load()},
		{Key: "handoff_slots_importing", Val: in}, {Key: "handoff_slots_migrating", Val: out},
		{Key: "handoff_last_move_usec", Val: st.lastMoveUsec.Load()},
		{Key: "handoff_import_timeouts", Val: st.importTimeouts.Load()},
		{Key: "handoff_crossed_cut", Val: st.crossedCut.Load()},
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
