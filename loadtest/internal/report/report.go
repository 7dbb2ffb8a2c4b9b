package report

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
)

// Write prints one run as a human-readable table.
func Write(out io.Writer, r Result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, format string, v ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, v...)...) }
	row("workload", "%s on %s", r.Workload, r.Target)
	row("load", "%s", loadShape(r))
	row("keys", "%d, %s", r.Keyspace, r.Dist)
	row("requests", "%d in %.2fs", r.Requests, r.Elapsed.Seconds())
	row("throughput", "%s/s", HumanCount(r.Throughput))
	row("allowed / denied", "%d / %d", r.Allowed, r.Denied)
	row("errors", "%d %s", r.Errors, r.FirstError)
	if r.Requests > 0 {
		row("client CPU", "%.2f µs/request (rlload itself)", float64(r.ClientCPU)/float64(r.Requests)/1e3)
	}
	l := r.Latency
	row("latency", "p50 %s  p90 %s  p99 %s  p99.9 %s  max %s", Dur(l.P50), Dur(l.P90), Dur(l.P99), Dur(l.P999), Dur(l.Max))
	if g := r.SendLag; g != nil {
		row("send lag", "p50 %s  p99 %s  max %s (the client's own lateness, counted in latency)", Dur(g.P50), Dur(g.P99), Dur(g.Max))
	}
	if m := r.Memory; m != nil {
		row("memory", "RSS %s → %s (%s), keys %d → %d, %s", Bytes(m.RSSBefore), Bytes(m.RSSAfter),
			m.Source, m.KeysBefore, m.KeysAfter, perKeyNote(m))
	}
	if a := r.Accuracy; a != nil {
		writeAccuracy(tw, a)
	}
	tw.Flush()
}

func writeAccuracy(tw io.Writer, a *accuracy.Result) {
	fmt.Fprintf(tw, "accuracy\t%d keys, %d admits (%d straddling a bucket edge), %d denials, %d unknown\n",
		a.Keys, a.Admits, a.Straddling, a.Denials, a.Unknown)
	fmt.Fprintf(tw, "over-admission\t%d units in %d windows\n", a.OverAdmitted, a.OverWindows)
	if a.UnderChecked {
		fmt.Fprintf(tw, "under-admission\t%d denials\n", a.UnderAdmitted)
	} else {
		fmt.Fprintf(tw, "under-admission\tnot judged for token buckets\n")
	}
}

// minKeysForPerKey is the fewest new keys that make bytes per key mean
// anything; below it allocator and page granularity dominate.
const minKeysForPerKey = 10000

func perKeyNote(m *proc.Memory) string {
	if m.KeysAfter-m.KeysBefore < minKeysForPerKey {
		return "too few new keys for bytes per key"
	}
	return fmt.Sprintf("%.0f B/key by %s", m.BytesPerKey, m.Basis)
}

func loadShape(r Result) string {
	if r.Rate > 0 {
		return fmt.Sprintf("open loop at %s/s over %d conns, up to %d per write", HumanCount(r.Rate), r.Conns, r.Pipeline)
	}
	return fmt.Sprintf("closed loop, %d conns × pipeline %d", r.Conns, r.Pipeline)
}

// Dur formats a latency compactly with three significant digits.
func Dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3gµs", float64(d)/1e3)
}

// Bytes formats a byte count in binary units.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// humanCount formats n with a k or M suffix.
func HumanCount(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}
