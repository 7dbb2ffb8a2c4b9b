package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/durable"
	"github.com/rlstore/rlstore/server/internal/observe"
	"github.com/rlstore/rlstore/server/internal/proc"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/rlstore/rlstore/shard"
)

// infoSection is one section of INFO: a name and the fields it shows.
type infoSection struct {
	name   string
	fields func(s *Server) []core.Pair
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
			fmt.Fprintf(&b, "%s:%v\r\n", f.Key, f.Val)
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

func (s *Server) infoServer() []core.Pair {
	_, port := s.hostPort()
	up := time.Since(s.started)
	return []core.Pair{
		{Key: "redis_version", Val: auth.RedisVersion},
		{Key: "redis_mode", Val: s.mode()},
		{Key: "os", Val: runtime.GOOS + " " + runtime.GOARCH},
		{Key: "arch_bits", Val: strconv.Itoa(strconv.IntSize)},
		{Key: "process_id", Val: os.Getpid()},
		{Key: "run_id", Val: s.info.runID},
		{Key: "tcp_port", Val: port},
		{Key: "server_time_usec", Val: time.Now().UnixMicro()},
		{Key: "uptime_in_seconds", Val: int64(up / time.Second)},
		{Key: "uptime_in_days", Val: int64(up / (24 * time.Hour))},
		{Key: "hz", Val: s.hz()},
		{Key: "configured_hz", Val: s.hz()},
		{Key: "executable", Val: executable()},
		{Key: "config_file", Val: s.cfg.ConfigFile},
		{Key: "rl_version", Val: s.cfg.Version},
		{Key: "rl_go_version", Val: runtime.Version()},
		{Key: "rl_server_threads", Val: runtime.GOMAXPROCS(0)}, // rlstore --server-threads
	}
}

func (s *Server) infoClients() []core.Pair {
	return []core.Pair{
		{Key: "connected_clients", Val: s.clients.Len()},
		{Key: "maxclients", Val: s.maxClients.Load()},
		{Key: "blocked_clients", Val: 0},
	}
}

// infoMemory reads the Go runtime's figures without stopping the world, and
// the resident set from the kernel.
func (s *Server) infoMemory() []core.Pair {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(m)
	heap, total := int64(m[0].Value.Uint64()), int64(m[1].Value.Uint64())
	rss := residentBytes()
	keys := s.cfg.Store.Stats().Bytes
	return []core.Pair{
		{Key: "used_memory", Val: heap},
		{Key: "used_memory_human", Val: humanBytes(heap)},
		{Key: "used_memory_rss", Val: rss},
		{Key: "used_memory_rss_human", Val: humanBytes(rss)},
		{Key: "used_memory_dataset", Val: keys},
		{Key: "rl_used_memory_dataset_human", Val: humanBytes(keys)},
		{Key: "maxmemory", Val: s.cfg.Store.MaxMemory()},
		{Key: "maxmemory_human", Val: humanBytes(s.cfg.Store.MaxMemory())},
		{Key: "maxmemory_policy", Val: "noeviction"}, // a full store refuses new keys; none is evicted
		{Key: "rl_go_runtime_bytes", Val: total},
	}
}

func (s *Server) infoStats() []core.Pair {
	st := s.cfg.Store.Stats()
	var accepted, rejected int64
	if ln := s.listener(); ln != nil {
		accepted, rejected = ln.Accepted.Load(), ln.Rejected.Load()
	}
	in, out := s.netBytes()
	_, errs := s.info.errors.Pairs()
	return append([]core.Pair{
		{Key: "total_connections_received", Val: accepted},
		{Key: "total_commands_processed", Val: s.commandsProcessed()},
		{Key: "instantaneous_ops_per_sec", Val: s.info.ops.PerSecond()},
		{Key: "total_net_input_bytes", Val: in},
		{Key: "total_net_output_bytes", Val: out},
		{Key: "rejected_connections", Val: rejected},
		{Key: "client_output_buffer_limit_disconnections", Val: s.outputLimitClosed.Load()}, // Redis 7.2's
		{Key: "evicted_clients", Val: s.mem.Evicted()},
		{Key: "expired_keys", Val: st.Swept},
		{Key: "evicted_keys", Val: 0}, // a full store refuses new keys (maxmemory_policy noeviction)
		{Key: "keyspace_hits", Val: s.info.hits.Load()},
		{Key: "keyspace_misses", Val: s.info.misses.Load()},
		{Key: "total_error_replies", Val: errs},
		{Key: "rl_allowed", Val: st.Allowed},
		{Key: "rl_denied", Val: st.Denied},
		{Key: "rl_shadow_denied", Val: st.Shadowed},
		{Key: "rl_errors", Val: st.Errors},
		{Key: "rl_shard_sweeps", Val: st.Sweeps},
		{Key: "rl_index_rebuilds", Val: st.Rebuilds},
	}, s.infoLeases(st)...)
}

// infoLeases are INFO stats' counts of leases and reservations: admitted
// and denied, settlements that found theirs ended, and those that ran out
// (the store's st).
func (s *Server) infoLeases(st shard.Stats) []core.Pair {
	d := &s.dec.Counts
	return []core.Pair{
		{Key: "rl_leases_allowed", Val: d[decide.SlotAcquire].Allowed.Load()},
		{Key: "rl_leases_denied", Val: d[decide.SlotAcquire].Denied.Load()},
		{Key: "rl_leases_ended", Val: d[decide.SlotRenew].Denied.Load() + d[decide.SlotRelease].Denied.Load()},
		{Key: "rl_leases_expired", Val: st.LeasesExpired},
		{Key: "rl_reservations_allowed", Val: d[decide.SlotReserve].Allowed.Load()},
		{Key: "rl_reservations_denied", Val: d[decide.SlotReserve].Denied.Load()},
		{Key: "rl_reservations_ended", Val: d[decide.SlotCommit].Denied.Load() + d[decide.SlotCancel].Denied.Load()},
		{Key: "rl_reservations_expired", Val: st.ReservationsExpired},
	}
}

// infoKeyspace shows db0 only when it holds keys, as Redis does. Every key
// expires by itself once it no longer restricts anything.
func (s *Server) infoKeyspace() []core.Pair {
	n := s.cfg.Store.Len()
	if n == 0 {
		return nil
	}
	return []core.Pair{{Key: "db0", Val: fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", n, n, s.avgTTL(s.unixNano()))}}
}

// commandsProcessed sums the commands of live clients and of those gone.
func (s *Server) commandsProcessed() int64 { return s.clients.Commands() }

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
func (s *Server) infoPersistence() []core.Pair {
	if s.cfg.Durability == nil {
		return []core.Pair{{Key: "loading", Val: 0}, {Key: "rl_persistence", Val: "disabled"}, {Key: "rdb_last_save_time", Val: 0}, {Key: "aof_enabled", Val: 0}}
	}
	st, ws := s.cfg.Durability.Stats(), s.dur.Stats()
	return []core.Pair{
		{Key: "loading", Val: 0},
		{Key: "rl_persistence", Val: "enabled"},
		{Key: "rdb_changes_since_last_save", Val: st.ChangesLogged},
		{Key: "rdb_bgsave_in_progress", Val: boolInt(st.Saving)},
		{Key: "rdb_last_save_time", Val: durable.UnixOrZero(st.LastSave)},
		{Key: "rdb_last_bgsave_status", Val: okOrErr(st.LastSaveErr)},
		{Key: "rdb_last_bgsave_time_sec", Val: int64(st.LastSaveDuration.Round(time.Second) / time.Second)},
		{Key: "rdb_saves", Val: st.Saves},
		{Key: "rl_rdb_last_save_duration_ms", Val: st.LastSaveDuration.Milliseconds()},
		{Key: "rl_rdb_last_save_bytes", Val: st.SnapshotBytes},
		{Key: "aof_enabled", Val: 1},
		{Key: "aof_rewrite_in_progress", Val: 0},
		{Key: "aof_last_write_status", Val: okOrErr(st.LogErr)},
		{Key: "rl_aof_write_errors", Val: st.LogWriteErrors},
		{Key: "rl_aof_failing_since", Val: durable.UnixOrZero(st.FailingSince)},
		{Key: "rl_misconf", Val: boolInt(st.Err != nil)},
		{Key: "rl_misconf_refused", Val: ws.Refused},
		{Key: "rl_failed_commits", Val: ws.FailedCommits},
		{Key: "rl_reverted_changes", Val: ws.Reverted},
		{Key: "aof_current_size", Val: st.LogBytes},
		{Key: "rl_appendfsync", Val: st.Fsync.String()},
		{Key: "rl_aof_last_fsync_ms", Val: unixMilliOrZero(st.LastFsync)}, // unix ms: tests wait for a whole flush with it
		{Key: "rl_aof_fsync_lag_ms", Val: st.FsyncLag.Milliseconds()},
		{Key: "rl_aof_fsyncs", Val: st.LogFsyncs.Count},
		{Key: "rl_aof_fsync_usec", Val: st.LogFsyncs.Total.Microseconds()},
		{Key: "rl_aof_fsync_errors", Val: st.LogFsyncs.Errors},
		{Key: "rl_rdb_fsyncs", Val: st.SnapshotFsyncs.Count},
		{Key: "rl_rdb_fsync_usec", Val: st.SnapshotFsyncs.Total.Microseconds()},
		{Key: "rl_loaded_keys", Val: st.KeysLoaded},
		{Key: "rl_load_time_ms", Val: st.LoadDuration.Milliseconds()},
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

// infoCPU is INFO cpu: the CPU seconds the process and its children have
// used, from getrusage(2) (package proc), as Redis shows them; zeros where
// the system does not say.
func (s *Server) infoCPU() []core.Pair {
	c := proc.ReadCPU()
	return []core.Pair{
		{Key: "used_cpu_sys", Val: cpuSeconds(c.Sys)},
		{Key: "used_cpu_user", Val: cpuSeconds(c.User)},
		{Key: "used_cpu_sys_children", Val: cpuSeconds(c.ChildrenSys)},
		{Key: "used_cpu_user_children", Val: cpuSeconds(c.ChildrenUser)},
	}
}

func cpuSeconds(t float64) string { return strconv.FormatFloat(t, 'f', 6, 64) }

// The INFO fields Redis 7 has that tools read (redis_exporter, RedisInsight,
// redis-cli --stat), with Redis's meanings: TestInfoFieldsMatchRedis holds
// every field to a field of Redis's or to the rl_ prefix.

// infoExtra is the server's state behind them.
type infoExtra struct {
	runID string // 40 hex characters, new at every start, as Redis's run_id

	hits, misses atomic.Int64 // keys found and not found by the keyspace's reads

	errors observe.Errors   // errorstats
	ops    observe.OpsMeter // instantaneous_ops_per_sec

	ttlCursor atomic.Uint64 // where the next avg_ttl sample starts, so that samples walk the keyspace
}

func newRunID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Server) infoErrorStats() []core.Pair {
	ps, _ := s.info.errors.Pairs()
	return ps
}

func (s *Server) infoCommandStats() []core.Pair { return observe.InfoCommandStats(s.table) }

func (s *Server) infoLatencyStats() []core.Pair { return observe.InfoLatencyStats(s.table) }

// netBytes sums the bytes read from and written to every client, live or gone.
func (s *Server) netBytes() (in, out int64) { return s.clients.NetBytes() }

// hz is the sweeps a second, Redis's hz: how often background work runs.
func (s *Server) hz() int64 { return int64(time.Second / s.cfg.SweepInterval) }

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// avgTTLSample is how many keys one INFO keyspace looks at for avg_ttl,
// in at most avgTTLScans steps of a SCAN.
const (
	avgTTLSample = 64
	avgTTLScans  = 64
)

// avgTTL estimates the keys' mean time to live in milliseconds from a
// sample, as Redis's avg_ttl is an estimate from the keys its expiry cycle
// samples; successive calls sample further along the keyspace.
func (s *Server) avgTTL(now int64) int64 {
	var keys [][]byte
	cursor := s.info.ttlCursor.Load()
	for range avgTTLScans { // SCAN's count is of slots visited, not keys found
		keys, cursor = s.cfg.Store.Scan(keys, cursor, avgTTLSample)
		if len(keys) >= avgTTLSample || cursor == 0 {
			break
		}
	}
	s.info.ttlCursor.Store(cursor)
	var sum, n int64
	for _, k := range keys {
		if _, exp, live := s.lookup(k, now); live {
			sum += (exp - now) / int64(time.Millisecond)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// infoReplication is INFO replication: in a cluster with replicas every
// node is the primary of its slots and the backup of others', so the role
// is master. A backup is no Redis replica (CLUSTER NODES shows none), so
// connected_slaves is 0 and the backups are listed as rl_backups and
// rl_backup0, rl_backup1, ….
func (s *Server) infoReplication() []core.Pair {
	if s.repl == nil {
		return []core.Pair{{Key: "role", Val: "master"}, {Key: "connected_slaves", Val: 0}, {Key: "rl_replicas", Val: 0}}
	}
	r := s.repl
	st, n := r.Stats(), r.Counts()
	ps := []core.Pair{{Key: "role", Val: "master"}, {Key: "connected_slaves", Val: 0}, {Key: "rl_replicas", Val: 1}, {Key: "rl_backups", Val: len(st)},
		{Key: "rl_replica_interval_ms", Val: r.Interval().Milliseconds()},
		{Key: "rl_copies", Val: n.Copies}, {Key: "rl_copies_refused", Val: n.Refused},
		{Key: "rl_copies_promoted", Val: n.Promoted}, {Key: "rl_copies_received_bytes", Val: n.Received},
		{Key: "rl_copies_deltas_missed", Val: n.Missed}}
	for i, p := range st {
		last := int64(0)
		if !p.LastShip.IsZero() {
			last = p.LastShip.UnixMilli()
		}
		state := "online"
		if !p.Synced {
			state = "full_sync_due"
		}
		host, port := route.SplitAddr(p.Addr)
		ps = append(ps, core.Pair{Key: "rl_backup" + strconv.Itoa(i), Val: "name=" + p.Name + ",ip=" + host + ",port=" + strconv.Itoa(port) +
			",state=" + state + ",shipped_bytes=" + strconv.FormatInt(p.Bytes, 10) +
			",shipments=" + strconv.FormatInt(p.Batches, 10) + ",lag_ms=" + strconv.FormatInt(p.Lag.Milliseconds(), 10) +
			",last_ship_ms=" + strconv.FormatInt(last, 10) + ",full_syncs=" + strconv.FormatInt(p.Fulls, 10) +
			",failures=" + strconv.FormatInt(p.Failures, 10) + ",deltas=" + strconv.Itoa(int(boolFloat(p.Deltas))) +
			",delta_misses=" + strconv.FormatInt(p.Misses, 10) + ",serving_ms=" + strconv.FormatInt(max(0, p.Serving.Milliseconds()), 10)})
	}
	return ps
}
