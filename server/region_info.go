package server

import (
	"io"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/server/internal/decide"
)

// stats reads the model's counters at now.
func (rn *regionNode) stats() region.Stats {
	now := rn.s.cfg.Clock().UnixNano()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.st.Stats(now)
}

// byNameOnly says INFO shows a section only when asked by its name, not for
// all or everything: tools compare those with Redis 7's sections, and
// regions is rlstore's own.
func byNameOnly(name string) bool { return name == "regions" }

// infoRegions is INFO regions.
func (s *Server) infoRegions() []pair {
	rn := s.reg
	if rn == nil {
		return []pair{{"rl_regions", 0}}
	}
	st := rn.stats()
	ps := []pair{{"rl_regions", len(rn.names)}, {"rl_region", rn.cfg.Name},
		{"rl_region_sync_ms", rn.cfg.Sync.Milliseconds()}, {"rl_region_escrow", fmtFloat(rn.rc.Escrow)},
		{"rl_region_reserve", fmtFloat(rn.rc.Reserve)}, {"rl_region_max_skew_ms", rn.rc.MaxSkew.Milliseconds()},
		{"rl_region_recovered", boolInt(st.Echoed == len(rn.names)-1)}, {"rl_region_keys", st.Keys}, {"rl_region_admitted", st.Admitted}, {"rl_region_unacked_units", st.Unacked},
		{"rl_region_windows_measured", st.WindowsMeasured}, {"rl_region_windows_overshoot", st.OvershootWindows},
		{"rl_region_overshoot_units", st.OvershootUnits}, {"rl_region_windows_unmeasured", st.WindowsUnmeasured},
		{"rl_region_worst_ratio", fmtFloat(st.Worst)}, {"rl_region_refused", rn.refused.Load()},
		{"rl_region_keyspace_refused", rn.mirrorFailed.Load()},
		{"rl_region_max_keys", rn.rc.MaxRemote}, {"rl_region_remote_keys", st.RemoteKeys},
		{"rl_region_keys_refused", st.KeysRefused}, {"rl_region_refused_by_peers", st.PeerRefused},
		{"rl_region_received", rn.received.Load()}, {"rl_region_received_bytes", rn.receivedBytes.Load()}}
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
		ps = append(ps, pair{"rl_region" + strconv.Itoa(n), "name=" + l.name + ",addr=" + l.addr + ",state=" + state +
			",lag_ms=" + strconv.FormatInt(p.Lag.Milliseconds(), 10) + ",rtt_ms=" + strconv.FormatInt(p.RTT.Milliseconds(), 10) +
			",skew_ms=" + strconv.FormatInt(p.Offset.Milliseconds(), 10) + ",unacked_keys=" + strconv.Itoa(p.Unacked) +
			",batches=" + strconv.FormatInt(l.sent.Load(), 10) + ",bytes=" + strconv.FormatInt(l.sentBytes.Load(), 10) +
			",failures=" + strconv.FormatInt(l.fails.Load(), 10) + ",dropped=" + strconv.FormatInt(l.dropped.Load(), 10)})
		n++
	}
	return ps
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// writeMetrics writes the regions' figures for /metrics.
func (rn *regionNode) writeMetrics(w io.Writer) {
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

// infoSplit returns RL.INFO's lines for a global key: each region's units
// in its window, as this region counts them.
func (rn *regionNode) infoSplit(key []byte) []pair {
	now := rn.s.cfg.Clock().UnixNano()
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
	return []pair{{"algorithm", lim.Kind.String()}, {"limit", lim.Limit}, {"window_ms", decide.CeilMs(lim.Window)},
		{"count", total}, {"global", 1}, {"regions", b.String()}, {"escrow", e}, {"reserve", phi}, {"bound", rn.rc.Bound(lim.Limit)}}
}
