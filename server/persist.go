package server

import (
	"errors"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
)

// Durability keeps the store's state on disk. *persistence.Store implements
// it; Config.Durability nil means state lives in memory only.
type Durability interface {
	// Commit makes every change made before the call durable. The server
	// calls it after the last command of a batch that changed state, before
	// the replies go out; under appendfsync always it waits for the fsync,
	// shared by every connection committing at the time, and under the other
	// modes it returns at once.
	Commit() error
	// Err returns why changes cannot be made durable now, or nil. While it
	// is not nil, commands that would change state get -MISCONF.
	Err() error
	Flush() error             // FLUSHALL: deletes every key and logs that it did
	Snapshot() error          // SAVE: writes a snapshot, after any being written
	BackgroundSnapshot() bool // BGSAVE: false if a snapshot is being written
	Stats() persistence.Stats // for LASTSAVE and INFO persistence
}

// Replies of the persistence commands.
const (
	errNoPersistence = "ERR persistence is not configured: state is in memory only, so there is nothing to save"
	errSaving        = "ERR Background save already in progress"
)

// misconf is Redis's reply to a write while its append-only log cannot be written.
func misconf(err error) string {
	return "MISCONF Errors writing to the AOF file: " + persistence.ErrnoText(err)
}

// runWrite runs a write command with persistence on. While the log cannot
// be written it is refused (see runRefused). Under appendfsync always its
// reply, and every reply after it in the batch, is held until commitBatch
// knows whether the commit succeeded.
func (s *Server) runWrite(c *client, cm *core.Command, args [][]byte) {
	if err := s.cfg.Durability.Err(); err != nil {
		s.runRefused(c, cm, args, misconf(err))
		return
	}
	if !s.holdCommits || c.hold == nil {
		c.changed = true
		s.call(c, cm, args)
		return
	}
	start := c.hold.hold()
	if s.recordChanges(c, cm, args) {
		c.changed = true
		c.hold.markWrite(start)
	}
}

// runRefused answers a write command while changes cannot be made durable.
// A decision is still made, as a peek: a denial, or a PEEK, changes nothing
// and is answered as usual; a request that would be admitted gets refuse,
// so nothing is charged that a crash could undo. Every other write command
// gets refuse, as Redis answers every write then.
func (s *Server) runRefused(c *client, cm *core.Command, args [][]byte, refuse string) {
	s.refused.Add(1)
	var peekArgs [][]byte
	var asked bool
	if cm.Peek != nil {
		peekArgs, asked = cm.Peek(args)
	}
	if peekArgs == nil || c.hold == nil {
		reject(c, refuse)
		return
	}
	held := c.hold.holding
	start := c.hold.hold()
	s.call(c, cm, peekArgs)
	if !asked && admitted(c.hold.since(start)) {
		c.hold.cut(start)
		c.hold.WriteError(refuse)
	}
	if !held {
		c.hold.release("")
	}
}

// admitted reports whether reply is a decision that admitted the request:
// an array whose first element is :1.
func admitted(reply []byte) bool {
	if len(reply) < 2 || reply[0] != '*' {
		return false
	}
	i := 1
	for i < len(reply) && reply[i] != '\n' {
		i++
	}
	rest := reply[min(i+1, len(reply)):]
	return len(rest) >= 4 && string(rest[:4]) == ":1\r\n"
}

// commitBatch makes a batch's changes durable before redcon writes its
// replies, which it does once the handler has run for the batch's last
// command. If the commit fails, every held reply of a write command is
// replaced by -MISCONF: the client learns that its request was not taken.
func (s *Server) commitBatch(c *client) {
	if len(c.conn.PeekPipeline()) > 0 {
		return
	}
	if !c.changed {
		if c.hold != nil {
			c.hold.release("")
		}
		return
	}
	c.changed = false
	var refuse string
	start := time.Now()
	err := s.cfg.Durability.Commit()
	s.commits.Observe(time.Since(start))
	if err != nil {
		refuse = misconf(err)
		s.failedCommits.Add(1)
		s.revert(c.changes)
	} else {
		s.settled()
	}
	clear(c.changes)
	c.changes = c.changes[:0]
	if c.hold != nil && c.hold.holding {
		c.hold.release(refuse)
	} else if refuse != "" {
		s.log.Debug("append-only log commit failed; closing the client without its replies", "client", c.id, "err", refuse)
		_ = c.g.Close() // replies already written cannot be taken back
	}
}

// cmdSave is SAVE. It waits for a snapshot already being written, then writes its own.
func cmdSave(s *Server, c *client, args [][]byte) {
	if s.cfg.Durability == nil {
		c.conn.WriteError(errNoPersistence)
		return
	}
	if err := s.snapshot(); err != nil {
		c.conn.WriteError("ERR " + err.Error())
		return
	}
	c.conn.WriteString("OK")
}

// cmdBgSave is BGSAVE [SCHEDULE]. A failure shows in the log and INFO
// persistence, as in Redis. SCHEDULE does not queue: a save under way
// already holds every change made before it finishes in its log.
func cmdBgSave(s *Server, c *client, args [][]byte) {
	switch {
	case len(args) > 2 || (len(args) == 2 && !equalFoldASCII(args[1], "schedule")):
		c.conn.WriteError(errSyntax)
	case s.cfg.Durability == nil:
		c.conn.WriteError(errNoPersistence)
	case !s.cfg.Durability.BackgroundSnapshot():
		c.conn.WriteError(errSaving)
	default:
		c.conn.WriteString("Background saving started")
	}
}

// cmdLastSave is LASTSAVE: the unix time of the last snapshot written or
// loaded at start, 0 if none.
func cmdLastSave(s *Server, c *client, args [][]byte) {
	var at int64
	if s.cfg.Durability != nil {
		at = unixOrZero(s.cfg.Durability.Stats().LastSave)
	}
	c.conn.WriteInt64(at)
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// snapshot takes a snapshot and logs the outcome.
func (s *Server) snapshot() error {
	start := time.Now()
	if err := s.cfg.Durability.Snapshot(); err != nil {
		s.log.Error("save failed", "err", err)
		return err
	}
	s.log.Info("saved", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// flushAll deletes every key, through the log when there is one.
func (s *Server) flushAll() error {
	switch {
	case s.cfg.Durability != nil:
		return s.cfg.Durability.Flush()
	case s.cl != nil && s.cl.repl != nil:
		s.cl.repl.Feed().Flush(s.cfg.Store.Flush) // the backups hear of it in order
		return nil
	}
	s.cfg.Store.Flush()
	return nil
}

// infoPersistence shows Redis's fields where they mean the same here: the
// snapshot is the rdb, the log the aof. rlstore's own start with rl_.
func (s *Server) infoPersistence() []pair {
	if s.cfg.Durability == nil {
		return []pair{{"loading", 0}, {"rl_persistence", "disabled"}, {"rdb_last_save_time", 0}, {"aof_enabled", 0}}
	}
	st := s.cfg.Durability.Stats()
	return []pair{
		{"loading", 0},
		{"rl_persistence", "enabled"},
		{"rdb_changes_since_last_save", st.ChangesLogged},
		{"rdb_bgsave_in_progress", boolInt(st.Saving)},
		{"rdb_last_save_time", unixOrZero(st.LastSave)},
		{"rdb_last_bgsave_status", okOrErr(st.LastSaveErr)},
		{"rdb_last_bgsave_time_sec", int64(st.LastSaveDuration.Round(time.Second) / time.Second)},
		{"rdb_saves", st.Saves},
		{"rl_rdb_last_save_duration_ms", st.LastSaveDuration.Milliseconds()},
		{"rl_rdb_last_save_bytes", st.SnapshotBytes},
		{"aof_enabled", 1},
		{"aof_rewrite_in_progress", 0},
		{"aof_last_write_status", okOrErr(st.LogErr)},
		{"rl_aof_write_errors", st.LogWriteErrors},
		{"rl_aof_failing_since", unixOrZero(st.FailingSince)},
		{"rl_misconf", boolInt(st.Err != nil)},
		{"rl_misconf_refused", s.refused.Load()},
		{"rl_failed_commits", s.failedCommits.Load()},
		{"rl_reverted_changes", s.reverted.Load()},
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
