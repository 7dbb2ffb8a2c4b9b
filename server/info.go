package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/durable"
	"github.com/rlstore/rlstore/shard"
)

// infoSection is one section of INFO: a name and the fields it shows.
type infoSection struct {
	name   string
	fields func(s *Server) []pair
}

// infoSections are INFO's sections, in Redis's order. Field names are
// Redis's where Redis has the field; rlstore's own start with rl_.
func infoSections() []infoSection {
	return []infoSection{
		{"server", (*Server).infoServer},
		{"clients", (*Server).infoClients},
		{"memory", (*Server).infoMemory},
		{"persistence", (*Server).infoPersistence},
		{"stats", (*Server).infoStats},
		{"replication", (*Server).infoReplication},
		{"cpu", (*Server).infoCPU},
		{"commandstats", (*Server).infoCommandStats},
		{"errorstats", (*Server).infoErrorStats},
		{"latencystats", (*Server).infoLatencyStats},
		{"cluster", (*Server).infoCluster},
		{"regions", (*Server).infoRegions},
		{"keyspace", (*Server).infoKeyspace},
	}
}

// notDefault are the sections INFO shows only when asked by name, or for
// "all" or "everything", as Redis does.
func notDefault(name string) bool {
	return name == "commandstats" || name == "latencystats" || byNameOnly(name)
}

// sectionTitle is a section's heading as Redis writes it.
func sectionTitle(name string) string {
	if name == "cpu" {
		return "CPU"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// cmdInfo is INFO [section …]. No section, "default", "all" or "everything" means all of them.
func cmdInfo(s *Server, c *client, args [][]byte) {
	var b strings.Builder
	for _, sec := range infoSections() {
		if !infoWanted(sec.name, args[1:]) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sectionTitle(sec.name) + "\r\n")
		for _, f := range sec.fields(s) {
			fmt.Fprintf(&b, "%s:%v\r\n", f.key, f.val)
		}
	}
	c.conn.WriteBulkString(b.String())
}

func infoWanted(name string, asked [][]byte) bool {
	if len(asked) == 0 {
		return !notDefault(name)
	}
	for _, a := range asked {
		if equalFoldASCII(a, name) || !byNameOnly(name) && (equalFoldASCII(a, "all") || equalFoldASCII(a, "everything") ||
			(equalFoldASCII(a, "default") && !notDefault(name))) {
			return true
		}
	}
	return false
}

func (s *Server) infoServer() []pair {
	_, port := s.hostPort()
	up := time.Since(s.started)
	return []pair{
		{"redis_version", auth.RedisVersion},
		{"redis_mode", s.mode()},
		{"os", runtime.GOOS + " " + runtime.GOARCH},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"process_id", os.Getpid()},
		{"run_id", s.info.runID},
		{"tcp_port", port},
		{"server_time_usec", time.Now().UnixMicro()},
		{"uptime_in_seconds", int64(up / time.Second)},
		{"uptime_in_days", int64(up / (24 * time.Hour))},
		{"hz", s.hz()},
		{"configured_hz", s.hz()},
		{"executable", executable()},
		{"config_file", s.cfg.ConfigFile},
		{"rl_version", s.cfg.Version},
		{"rl_go_version", runtime.Version()},
		{"rl_server_threads", runtime.GOMAXPROCS(0)}, // rlstore --server-threads
	}
}

func (s *Server) infoClients() []pair {
	s.mu.Lock()
	n := len(s.clients)
	s.mu.Unlock()
	return []pair{
		{"connected_clients", n},
		{"maxclients", s.maxClients.Load()},
		{"blocked_clients", 0},
	}
}

// infoMemory reads the Go runtime's figures without stopping the world, and
// the resident set from the kernel.
func (s *Server) infoMemory() []pair {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(m)
	heap, total := int64(m[0].Value.Uint64()), int64(m[1].Value.Uint64())
	rss := residentBytes()
	keys := s.cfg.Store.Stats().Bytes
	return []pair{
		{"used_memory", heap},
		{"used_memory_human", humanBytes(heap)},
		{"used_memory_rss", rss},
		{"used_memory_rss_human", humanBytes(rss)},
		{"used_memory_dataset", keys},
		{"rl_used_memory_dataset_human", humanBytes(keys)},
		{"maxmemory", s.cfg.Store.MaxMemory()},
		{"maxmemory_human", humanBytes(s.cfg.Store.MaxMemory())},
		{"maxmemory_policy", "noeviction"}, // a full store refuses new keys; none is evicted
		{"rl_go_runtime_bytes", total},
	}
}

func (s *Server) infoStats() []pair {
	st := s.cfg.Store.Stats()
	var accepted, rejected int64
	if ln := s.listener(); ln != nil {
		accepted, rejected = ln.Accepted.Load(), ln.Rejected.Load()
	}
	in, out := s.netBytes()
	_, errs := s.info.errorStats()
	return append([]pair{
		{"total_connections_received", accepted},
		{"total_commands_processed", s.commandsProcessed()},
		{"instantaneous_ops_per_sec", s.info.ops.perSecond()},
		{"total_net_input_bytes", in},
		{"total_net_output_bytes", out},
		{"rejected_connections", rejected},
		{"client_output_buffer_limit_disconnections", s.outputLimitClosed.Load()}, // Redis 7.2's
		{"evicted_clients", s.mem.Evicted()},
		{"expired_keys", st.Swept},
		{"evicted_keys", 0}, // a full store refuses new keys (maxmemory_policy noeviction)
		{"keyspace_hits", s.info.hits.Load()},
		{"keyspace_misses", s.info.misses.Load()},
		{"total_error_replies", errs},
		{"rl_allowed", st.Allowed},
		{"rl_denied", st.Denied},
		{"rl_shadow_denied", st.Shadowed},
		{"rl_errors", st.Errors},
		{"rl_shard_sweeps", st.Sweeps},
		{"rl_index_rebuilds", st.Rebuilds},
	}, s.infoLeases(st)...)
}

// infoLeases are INFO stats' counts of leases and reservations: admitted
// and denied, settlements that found theirs ended, and those that ran out
// (the store's st).
func (s *Server) infoLeases(st shard.Stats) []pair {
	d := &s.dec.Counts
	return []pair{
		{"rl_leases_allowed", d[decide.SlotAcquire].Allowed.Load()},
		{"rl_leases_denied", d[decide.SlotAcquire].Denied.Load()},
		{"rl_leases_ended", d[decide.SlotRenew].Denied.Load() + d[decide.SlotRelease].Denied.Load()},
		{"rl_leases_expired", st.LeasesExpired},
		{"rl_reservations_allowed", d[decide.SlotReserve].Allowed.Load()},
		{"rl_reservations_denied", d[decide.SlotReserve].Denied.Load()},
		{"rl_reservations_ended", d[decide.SlotCommit].Denied.Load() + d[decide.SlotCancel].Denied.Load()},
		{"rl_reservations_expired", st.ReservationsExpired},
	}
}

// infoKeyspace shows db0 only when it holds keys, as Redis does. Every key
// expires by itself once it no longer restricts anything.
func (s *Server) infoKeyspace() []pair {
	n := s.cfg.Store.Len()
	if n == 0 {
		return nil
	}
	return []pair{{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", n, n, s.avgTTL(s.unixNano()))}}
}

// commandsProcessed sums the commands of live clients and of those gone.
func (s *Server) commandsProcessed() int64 {
	n := s.goneCmds.Load()
	s.mu.Lock()
	for _, c := range s.clients {
		n += c.Cmds.Load()
	}
	s.mu.Unlock()
	return n
}

// residentBytes reads the resident set size from /proc/self/statm, or 0 where there is none.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}

// humanBytes writes n as Redis's INFO does: 1023B, 1.50K, 2.25M, 1.00G.
func humanBytes(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return strconv.FormatInt(n, 10) + "B"
	case n < k*k:
		return fmt.Sprintf("%.2fK", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.2fM", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.2fG", float64(n)/(k*k*k))
}

// infoPersistence shows Redis's fields where they mean the same here: the
// snapshot is the rdb, the log the aof. rlstore's own start with rl_.
func (s *Server) infoPersistence() []pair {
	if s.cfg.Durability == nil {
		return []pair{{"loading", 0}, {"rl_persistence", "disabled"}, {"rdb_last_save_time", 0}, {"aof_enabled", 0}}
	}
	st, ws := s.cfg.Durability.Stats(), s.dur.Stats()
	return []pair{
		{"loading", 0},
		{"rl_persistence", "enabled"},
		{"rdb_changes_since_last_save", st.ChangesLogged},
		{"rdb_bgsave_in_progress", boolInt(st.Saving)},
		{"rdb_last_save_time", durable.UnixOrZero(st.LastSave)},
		{"rdb_last_bgsave_status", okOrErr(st.LastSaveErr)},
		{"rdb_last_bgsave_time_sec", int64(st.LastSaveDuration.Round(time.Second) / time.Second)},
		{"rdb_saves", st.Saves},
		{"rl_rdb_last_save_duration_ms", st.LastSaveDuration.Milliseconds()},
		{"rl_rdb_last_save_bytes", st.SnapshotBytes},
		{"aof_enabled", 1},
		{"aof_rewrite_in_progress", 0},
		{"aof_last_write_status", okOrErr(st.LogErr)},
		{"rl_aof_write_errors", st.LogWriteErrors},
		{"rl_aof_failing_since", durable.UnixOrZero(st.FailingSince)},
		{"rl_misconf", boolInt(st.Err != nil)},
		{"rl_misconf_refused", ws.Refused},
		{"rl_failed_commits", ws.FailedCommits},
		{"rl_reverted_changes", ws.Reverted},
		{"aof_current_size", st.LogBytes},
		{"rl_appendfsync", st.Fsync.String()},
		{"rl_aof_last_fsync_ms", unixMilliOrZero(st.LastFsync)}, // unix ms: tests wait for a whole flush with it
		{"rl_aof_fsync_lag_ms", st.FsyncLag.Milliseconds()},
		{"rl_aof_fsyncs", st.LogFsyncs.Count},
		{"rl_aof_fsync_usec", st.LogFsyncs.Total.Microseconds()},
		{"rl_aof_fsync_errors", st.LogFsyncs.Errors},
		{"rl_rdb_fsyncs", st.SnapshotFsyncs.Count},
		{"rl_rdb_fsync_usec", st.SnapshotFsyncs.Total.Microseconds()},
		{"rl_loaded_keys", st.KeysLoaded},
		{"rl_load_time_ms", st.LoadDuration.Milliseconds()},
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func okOrErr(err error) string {
	if err != nil && !errors.Is(err, persistence.ErrClosed) {
		return "err"
	}
	return "ok"
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
