package server

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/observe"
)

// namedStats is a command's full name (with "|" between a command and its
// subcommand) and its counters.
type namedStats struct {
	name string
	st   *core.Stats
}

// commandStats lists every command that has run or been rejected, by name.
// A renamed command shows under its original name, as Redis shows it.
func (s *Server) commandStats() []namedStats {
	var out []namedStats
	seen := map[*core.Stats]bool{}
	add := func(cm *core.Command) {
		if !seen[cm.Stats] && (cm.Stats.Calls.Load() > 0 || cm.Stats.Rejected.Load() > 0) {
			seen[cm.Stats] = true
			out = append(out, namedStats{cm.Name, cm.Stats})
		}
	}
	for _, cm := range s.table.Names() {
		add(cm)
		for i := range cm.Subs {
			add(&cm.Subs[i])
		}
	}
	slices.SortFunc(out, func(a, b namedStats) int { return strings.Compare(a.name, b.name) })
	return out
}

// infoCommandStats is INFO commandstats, in Redis 7's format.
func (s *Server) infoCommandStats() []core.Pair {
	var ps []core.Pair
	for _, n := range s.commandStats() {
		calls, usec := n.st.Calls.Load(), n.st.Usec.Load()
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		ps = append(ps, core.Pair{Key: "cmdstat_" + n.name, Val: "calls=" + strconv.FormatInt(calls, 10) +
			",usec=" + strconv.FormatInt(usec, 10) + ",usec_per_call=" + strconv.FormatFloat(per, 'f', 2, 64) +
			",rejected_calls=" + strconv.FormatInt(n.st.Rejected.Load(), 10) +
			",failed_calls=" + strconv.FormatInt(n.st.Failed.Load(), 10)})
	}
	return ps
}

// infoLatencyStats is INFO latencystats: p50, p99 and p99.9 of each
// command's run time in microseconds. They are read off the histogram, so
// each is the upper bound of the bucket the percentile falls in.
func (s *Server) infoLatencyStats() []core.Pair {
	var ps []core.Pair
	for _, n := range s.commandStats() {
		if n.st.Calls.Load() == 0 {
			continue
		}
		counts := n.st.Counts()
		ps = append(ps, core.Pair{Key: "latency_percentiles_usec_" + n.name,
			Val: "p50=" + observe.Percentile(counts, 0.5) + ",p99=" + observe.Percentile(counts, 0.99) + ",p99.9=" + observe.Percentile(counts, 0.999)})
	}
	return ps
}
