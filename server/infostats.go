package server

import (
	"slices"
	"strconv"
	"strings"
)

// namedStats is a command's full name (with "|" between a command and its
// subcommand) and its counters.
type namedStats struct {
	name string
	st   *cmdStats
}

// commandStats lists every command that has run or been rejected, by name.
// A renamed command shows under its original name, as Redis shows it.
func (s *Server) commandStats() []namedStats {
	var out []namedStats
	seen := map[*cmdStats]bool{}
	add := func(cm *command) {
		if !seen[cm.stats] && (cm.stats.calls.Load() > 0 || cm.stats.rejected.Load() > 0) {
			seen[cm.stats] = true
			out = append(out, namedStats{cm.name, cm.stats})
		}
	}
	for _, cm := range s.commands {
		add(cm)
		for i := range cm.subs {
			add(&cm.subs[i])
		}
	}
	slices.SortFunc(out, func(a, b namedStats) int { return strings.Compare(a.name, b.name) })
	return out
}

// infoCommandStats is INFO commandstats, in Redis 7's format.
func (s *Server) infoCommandStats() []pair {
	var ps []pair
	for _, n := range s.commandStats() {
		calls, usec := n.st.calls.Load(), n.st.usec.Load()
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		ps = append(ps, pair{"cmdstat_" + n.name, "calls=" + strconv.FormatInt(calls, 10) +
			",usec=" + strconv.FormatInt(usec, 10) + ",usec_per_call=" + strconv.FormatFloat(per, 'f', 2, 64) +
			",rejected_calls=" + strconv.FormatInt(n.st.rejected.Load(), 10) +
			",failed_calls=" + strconv.FormatInt(n.st.failed.Load(), 10)})
	}
	return ps
}

// infoLatencyStats is INFO latencystats: p50, p99 and p99.9 of each
// command's run time in microseconds. They are read off the histogram, so
// each is the upper bound of the bucket the percentile falls in.
func (s *Server) infoLatencyStats() []pair {
	var ps []pair
	for _, n := range s.commandStats() {
		if n.st.calls.Load() == 0 {
			continue
		}
		counts := n.st.counts()
		ps = append(ps, pair{"latency_percentiles_usec_" + n.name,
			"p50=" + percentile(counts, 0.5) + ",p99=" + percentile(counts, 0.99) + ",p99.9=" + percentile(counts, 0.999)})
	}
	return ps
}

// counts reads the histogram's buckets.
func (st *cmdStats) counts() []int64 {
	out := make([]int64, len(st.buckets))
	for i := range st.buckets {
		out[i] = st.buckets[i].Load()
	}
	return out
}

// percentile returns the upper bound of the bucket holding quantile q.
func percentile(counts []int64, q float64) string {
	var total int64
	for _, n := range counts {
		total += n
	}
	want := int64(float64(total)*q + 0.999999)
	var seen int64
	for i, n := range counts {
		seen += n
		if seen >= want && i < len(latencyBounds) {
			return strconv.FormatInt(latencyBounds[i], 10) + ".000"
		}
	}
	return "inf"
}
