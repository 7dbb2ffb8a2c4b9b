package observe

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// Named is a command's full name (with "|" between a command and its
// subcommand) and its counters.
type Named struct {
	Name  string
	Stats *core.Stats
}

// CommandStats lists every command of t that has run or been rejected, by
// name. A renamed command shows under its original name, as Redis shows it.
func CommandStats(t *core.Table) []Named {
	var out []Named
	seen := map[*core.Stats]bool{}
	add := func(cm *core.Command) {
		if !seen[cm.Stats] && (cm.Stats.Calls.Load() > 0 || cm.Stats.Rejected.Load() > 0) {
			seen[cm.Stats] = true
			out = append(out, Named{cm.Name, cm.Stats})
		}
	}
	for _, cm := range t.Names() {
		add(cm)
		for i := range cm.Subs {
			add(&cm.Subs[i])
		}
	}
	slices.SortFunc(out, func(a, b Named) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// InfoCommandStats is INFO commandstats, in Redis 7's format.
func InfoCommandStats(t *core.Table) []core.Pair {
	var ps []core.Pair
	for _, n := range CommandStats(t) {
		calls, usec := n.Stats.Calls.Load(), n.Stats.Usec.Load()
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		ps = append(ps, core.Pair{Key: "cmdstat_" + n.Name, Val: "calls=" + strconv.FormatInt(calls, 10) +
			",usec=" + strconv.FormatInt(usec, 10) + ",usec_per_call=" + strconv.FormatFloat(per, 'f', 2, 64) +
			",rejected_calls=" + strconv.FormatInt(n.Stats.Rejected.Load(), 10) +
			",failed_calls=" + strconv.FormatInt(n.Stats.Failed.Load(), 10)})
	}
	return ps
}

// InfoLatencyStats is INFO latencystats: p50, p99 and p99.9 of each
// command's run time in microseconds. They are read off the histogram, so
// each is the upper bound of the bucket the percentile falls in.
func InfoLatencyStats(t *core.Table) []core.Pair {
	var ps []core.Pair
	for _, n := range CommandStats(t) {
		if n.Stats.Calls.Load() == 0 {
			continue
		}
		counts := n.Stats.Counts()
		ps = append(ps, core.Pair{Key: "latency_percentiles_usec_" + n.Name,
			Val: "p50=" + Percentile(counts, 0.5) + ",p99=" + Percentile(counts, 0.99) + ",p99.9=" + Percentile(counts, 0.999)})
	}
	return ps
}

// maxErrorKinds bounds errorstats, as Redis bounds it at 128 kinds.
const maxErrorKinds = 128

// Errors counts error replies by their first word (ERR, WRONGPASS, …), as
// Redis's errorstats does. The zero value is ready; safe for concurrent use.
type Errors struct {
	mu    sync.Mutex       // guards kinds
	kinds map[string]int64 // error replies by their first word
}

// Count counts the error reply msg under its first word.
func (e *Errors) Count(msg string) {
	kind, _, _ := strings.Cut(msg, " ")
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.kinds == nil {
		e.kinds = map[string]int64{}
	}
	if _, ok := e.kinds[kind]; !ok && len(e.kinds) >= maxErrorKinds {
		kind = "ERR" // past the bound, counted with the generic kind
	}
	e.kinds[kind]++
}

// Pairs returns errorstats' pairs sorted by kind, and their total.
func (e *Errors) Pairs() ([]core.Pair, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ps []core.Pair
	var total int64
	for k, n := range e.kinds {
		ps = append(ps, core.Pair{Key: "errorstat_" + k, Val: "count=" + strconv.FormatInt(n, 10)})
		total += n
	}
	slices.SortFunc(ps, func(a, b core.Pair) int { return strings.Compare(a.Key, b.Key) })
	return ps, total
}

// OpsMeter is instantaneous_ops_per_sec as Redis computes it: the commands
// per second of each 100 ms or so, averaged over the last 16 samples. The
// zero value is ready; safe for concurrent use.
type OpsMeter struct {
	mu      sync.Mutex // guards the fields below
	at      time.Time  // the last sample's time
	n       int64      // commands processed then
	samples [16]float64
	i, full int
}

// Sample notes that n commands had been processed by now.
func (m *OpsMeter) Sample(now time.Time, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.at.IsZero() && now.After(m.at) {
		m.samples[m.i] = float64(n-m.n) / now.Sub(m.at).Seconds()
		m.i = (m.i + 1) % len(m.samples)
		m.full = min(m.full+1, len(m.samples))
	}
	m.at, m.n = now, n
}

// PerSecond is the mean rate of the samples so far.
func (m *OpsMeter) PerSecond() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.full == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range m.samples[:m.full] {
		sum += v
	}
	return int64(sum/float64(m.full) + 0.5)
}
