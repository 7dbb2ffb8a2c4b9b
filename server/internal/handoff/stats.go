package handoff

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// handoffPairs are the handoff's counters for RL.CLUSTER INFO and INFO
// cluster: slots, keys and bytes this node moved in and out, the moves
// under way, and how long its last migration out took to its cut.
func (n *Node) handoffPairs() []core.Pair {
	h := &n.ho
	in, out := h.moving()
	st := &h.stats
	return append([]core.Pair{
		{Key: "handoff_slots_in", Val: st.slotsIn.Load()}, {Key: "handoff_slots_out", Val: st.slotsOut.Load()},
		{Key: "handoff_keys_in", Val: st.keysIn.Load()}, {Key: "handoff_keys_out", Val: st.keysOut.Load()},
		{Key: "handoff_bytes_in", Val: st.bytesIn.Load()}, {Key: "handoff_bytes_out", Val: st.bytesOut.Load()},
		{Key: "handoff_moves_in_progress", Val: st.moving.Load()},
		{Key: "handoff_slots_importing", Val: in}, {Key: "handoff_slots_migrating", Val: out},
		{Key: "handoff_last_move_usec", Val: st.lastMoveUsec.Load()},
		{Key: "handoff_import_timeouts", Val: st.importTimeouts.Load()},
		{Key: "handoff_crossed_cut", Val: st.crossedCut.Load()},
	}, h.stuckPairs()...)
}

// Stats are the handoff's counters, for /metrics.
type Stats struct {
	SlotsIn, SlotsOut, KeysIn, KeysOut, BytesIn, BytesOut int64
	Moves                                                 int64 // migrations and imports under way
	Importing, Migrating                                  int   // slots moving now
	LastMove                                              time.Duration
	ImportTimeouts, CrossedCut                            int64
	ImportsStuck                                          int           // slots whose import waited longer than the import wait
	LongestImport                                         time.Duration // the longest wait of any import now
	ImportsEnded                                          int64         // import waits an operator ended (stable.go)
}

// Stats returns the handoff's counters.
func (n *Node) Stats() Stats {
	st := &n.ho.stats
	in, out := n.ho.moving()
	stuck := n.ho.stuck()
	return Stats{SlotsIn: st.slotsIn.Load(), SlotsOut: st.slotsOut.Load(), KeysIn: st.keysIn.Load(), KeysOut: st.keysOut.Load(),
		BytesIn: st.bytesIn.Load(), BytesOut: st.bytesOut.Load(), Moves: st.moving.Load(), Importing: in, Migrating: out,
		LastMove:       time.Duration(st.lastMoveUsec.Load()) * time.Microsecond,
		ImportTimeouts: st.importTimeouts.Load(), CrossedCut: st.crossedCut.Load(),
		ImportsStuck: stuck.slots, LongestImport: stuck.longest, ImportsEnded: n.ho.waits.ended.Load()}
}
