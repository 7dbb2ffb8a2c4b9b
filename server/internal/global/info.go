package global

import (
	"io"
	"strconv"
	"strings"
	"time"

	vm "github.com/VictoriaMetrics/metrics"

	"github.com/rlstore/rlstore/region"
)

// stats reads the model's counters at now.
func (rn *Node) stats() region.Stats {
	now := rn.d.UnixNano()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.st.Stats(now)
}

// Field is one line of INFO regions or of RL.INFO: a name and its value
// (a string, an int or an int64).
type Field struct {
	Key string
	Val any
}

// Info is INFO regions.
func (rn *Node) Info() []Field {
	st := rn.stats()
	ps := []Field{{"rl_regions", len(rn.names)}, {"rl_region", rn.cfg.Name},
		{"rl_region_sync_ms", rn.cfg.Sync.Milliseconds()}, {"rl_region_escrow", fmtFloat(rn.rc.Escrow)},
		{"rl_region_reserve", fmtFloat(rn.rc.Reserve)}, {"rl_region_max_skew_ms", rn.rc.MaxSkew.Milliseconds()},
		{"rl_region_recovered", boolInt(st.Echoed == len(rn.names)-1)}, {"rl_region_keys", st.Keys}, {"rl_region_admitted", st.Admitted}, {"rl_region_unacked_units", st.Unacked},
		{"rl_region_windows_measured", st.WindowsMeasured}, {"rl_region_windows_overshoot", st.OvershootWindows},
		{"rl_region_overshoot_units", st.OvershootUnits}, {"rl_region_windows_unmeasured", st.WindowsUnmeasured},
		{"rl_region_worst_ratio", fmtFloat(st.Worst)}, {"rl_region_refused", rn.refused.Load()},
		{"rl_region_keyspace_refused", rn.mirrorFailed.Load()},
		{"rl_region_max_keys", rn.rc.MaxRemote}, {"rl_region_remote_keys", st.RemoteKeys}, {"rl_region_bytes", st.Bytes},
		{"rl_region_keys_refused", st.KeysRefused}, {"rl_region_refused_by_peers", st.PeerRefused},
		{"rl_region_received", rn.received.Load()}, {"rl_region_received_bytes", rn.receivedBytes.Load()}}
	if rn.cfg.Cluster != nil {
		t := rn.cfg.Cluster.Topology()
		gw := ""
		if len(t.Names) > 0 {
			gw = t.Names[0]
		}
		ps = append(ps, Field{"rl_region_member", rn.rc.Member}, Field{"rl_region_gateway", gw},
			Field{"rl_region_relayed", rn.relayed.Load()}, Field{"rl_region_parts_failed", rn.partFails.Load()},
			Field{"rl_region_handed", rn.handed.Load()}, Field{"rl_region_taken", rn.taken.Load()},
			Field{"rl_region_pulls_failed", rn.pullFails.Load()}, Field{"rl_region_import_refused", rn.importRefused.Load()})
	}
	n := 0
	for i, l := range rn.links {
		if l == nil {
			continue
		}
		p := st.Peers[i]
		state := "down"
		if l.up.Load() {
			state = "up"
		}
		ps = append(ps, Field{"rl_region" + strconv.Itoa(n), "name=" + l.name + ",addr=" + l.target() + ",state=" + state +
			",lag_ms=" + strconv.FormatInt(p.Lag.Milliseconds(), 10) + ",rtt_ms=" + strconv.FormatInt(p.RTT.Milliseconds(), 10) +
			",skew_ms=" + strconv.FormatInt(p.Offset.Milliseconds(), 10) + ",unacked_keys=" + strconv.Itoa(p.Unacked) +
			",batches=" + strconv.FormatInt(l.sent.Load(), 10) + ",bytes=" + strconv.FormatInt(l.sentBytes.Load(), 10) +
			",failures=" + strconv.FormatInt(l.fails.Load(), 10) + ",dropped=" + strconv.FormatInt(l.dropped.Load(), 10) +
			",messages=" + strconv.FormatInt(l.messages.Load(), 10) + ",carried=" + strconv.FormatInt(l.carried.Load(), 10)})
		n++
	}
	return ps
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func counter(w io.Writer, name string, v int64) { vm.WriteCounterUint64(w, name, uint64(max(v, 0))) }

func gauge(w io.Writer, name string, v float64) { vm.WriteGaugeFloat64(w, name, v) }

// labelValue escapes v for a Prometheus label value.
func labelValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

// WriteMetrics writes the regions' figures for /metrics.
func (rn *Node) WriteMetrics(w io.Writer) {
	st := rn.stats()
	counter(w, "rlstore_region_admitted_units_total", st.Admitted)
	counter(w, "rlstore_region_overshoot_units_total", st.OvershootUnits)
	counter(w, "rlstore_region_overshoot_windows_total", st.OvershootWindows)
	counter(w, "rlstore_region_windows_measured_total", st.WindowsMeasured)
	counter(w, "rlstore_region_windows_unmeasured_total", st.WindowsUnmeasured)
	counter(w, "rlstore_region_sync_refused_total", rn.refused.Load())
	gauge(w, "rlstore_region_unacked_units", float64(st.Unacked))
	gauge(w, "rlstore_region_worst_ratio", st.Worst)
	gauge(w, "rlstore_region_keys", float64(st.Keys))
	gauge(w, "rlstore_region_remote_keys", float64(st.RemoteKeys))
	gauge(w, "rlstore_region_bytes", float64(st.Bytes))
	counter(w, "rlstore_region_keys_refused_total", st.KeysRefused)
	counter(w, "rlstore_region_refused_by_peers_total", st.PeerRefused)
	for i, l := range rn.links {
		if l == nil {
			continue
		}
		p, lb := st.Peers[i], `{region="`+labelValue(l.name)+`"}`
		gauge(w, "rlstore_region_sync_lag_seconds"+lb, p.Lag.Seconds())
		gauge(w, "rlstore_region_rtt_seconds"+lb, since(p.RTT, !p.SkewKnown))
		gauge(w, "rlstore_region_clock_skew_seconds"+lb, p.Offset.Seconds())
		gauge(w, "rlstore_region_unacked_keys"+lb, float64(p.Unacked))
		gauge(w, "rlstore_region_up"+lb, boolFloat(l.up.Load()))
		counter(w, "rlstore_region_sync_batches_total"+lb, l.sent.Load())
		counter(w, "rlstore_region_sync_bytes_total"+lb, l.sentBytes.Load())
		counter(w, "rlstore_region_sync_failures_total"+lb, l.fails.Load())
	}
}

// InfoSplit returns RL.INFO's lines for a global key: each region's units
// in its window, as this region counts them.
func (rn *Node) InfoSplit(key []byte) []Field {
	now := rn.d.UnixNano()
	rn.mu.Lock()
	lim, split, ok := rn.st.Split(key, now)
	rn.mu.Unlock()
	if !ok {
		return nil
	}
	var b strings.Builder
	var total int64
	for i, n := range split {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(rn.names[i] + "=" + strconv.FormatInt(n, 10))
		total += n
	}
	e, phi := rn.rc.Budgets(lim.Limit)
	return []Field{{"algorithm", lim.Kind.String()}, {"limit", lim.Limit}, {"window_ms", ceilMs(lim.Window)},
		{"count", total}, {"global", 1}, {"regions", b.String()}, {"escrow", e}, {"reserve", phi}, {"bound", rn.rc.Bound(lim.Limit)}}
}

// ceilMs is d in whole milliseconds, rounded up, as RL.INFO writes every
// window (decide.CeilMs: the decision family may ask this package, so this
// one does not import it).
func ceilMs(d time.Duration) int64 {
	return int64((max(d, 0) + time.Millisecond - 1) / time.Millisecond)
}
