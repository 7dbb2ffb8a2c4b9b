package durable

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
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

// Config is what the write path needs of the server, set once at start.
type Config struct {
	Durability Durability // nil: state lives in memory only
	Store      *shard.Map
	Logger     *slog.Logger
	Now        func() int64 // the server's clock, in unix nanoseconds; nil: time.Now
}

// Writes runs write commands under the durability's rules, and SAVE,
// BGSAVE and LASTSAVE. Make it with New; it is safe for concurrent use.
// Each connection keeps its own state in a Batch, which only Writes reads.
type Writes struct {
	cfg   Config
	Hooks Hooks // tests only

	holdCommits   bool         // appendfsync always: replies wait for the commit (see Run)
	refused       atomic.Int64 // write commands answered -MISCONF before they ran
	failedCommits atomic.Int64 // batches whose commit failed
	reverted      atomic.Int64 // changes taken back after their commit failed
	commits       core.Stats   // commits' latency, for /metrics
	reverts       reverts
	keyLocks      keyLocks // see record
}

// New returns the write path over cfg.
func New(cfg Config) *Writes {
	w := &Writes{cfg: cfg}
	w.holdCommits = cfg.Durability != nil && cfg.Durability.Stats().Fsync == persistence.FsyncAlways
	return w
}

// Stats are the write path's counters, for INFO persistence and /metrics.
type Stats struct {
	Refused       int64 // write commands answered -MISCONF before they ran
	FailedCommits int64 // batches whose commit failed
	Reverted      int64 // changes taken back after their commit failed
}

// Stats returns the counters.
func (w *Writes) Stats() Stats {
	return Stats{Refused: w.refused.Load(), FailedCommits: w.failedCommits.Load(), Reverted: w.reverted.Load()}
}

// Commits returns the commits' latency.
func (w *Writes) Commits() *core.Stats { return &w.commits }

// Batch is one connection's state as the write path sees it: whether its
// batch changed state, what it changed, and its held replies. The server
// keeps it in its client by value, where only this package reaches its
// fields: a write finds it without a slot's type assertion.
type Batch struct {
	x     *core.Session
	rc    Conn                                  // the connection, under any wrapper
	hold  *Hold                                 // the replies, when persistence is on; see Run
	call  func(cm *core.Command, args [][]byte) // runs a command on the connection
	close func() error                          // closes the socket now
	id    int64                                 // the client's, for the log

	changed bool     // ran a write command since the last commit (see Commit)
	changes []change // under appendfsync always: what the batch changed, to take back if its commit fails
	looked  []state  // record's scratch
	stripes []uint8  // the key locks record holds
}

// Open makes b the batch state of a connection: x its session, rc its
// connection, id the client's, closeNow what closes its socket at once and
// call what runs a command on it. It returns what the connection's replies
// go through: rc, or, with persistence on, a Hold over it.
func (w *Writes) Open(b *Batch, x *core.Session, rc Conn, id int64, closeNow func() error, call func(*core.Command, [][]byte)) Conn {
	*b = Batch{x: x, rc: rc, call: call, close: closeNow, id: id}
	if w.cfg.Durability == nil {
		return rc
	}
	b.hold = newHold(rc)
	return b.hold
}

// Holding reports whether b's replies are being held for a commit.
func (b *Batch) Holding() bool { return b.hold != nil && b.hold.holding }

// misconf is Redis's reply to a write while its append-only log cannot be written.
func misconf(err error) string {
	return "MISCONF Errors writing to the AOF file: " + persistence.ErrnoText(err)
}

// Run runs a write command with persistence on. While the log cannot be
// written it is refused (see runRefused). Under appendfsync always its
// reply, and every reply after it in the batch, is held until Commit knows
// whether the commit succeeded.
func (w *Writes) Run(b *Batch, cm *core.Command, args [][]byte) {
	if err := w.cfg.Durability.Err(); err != nil {
		w.runRefused(b, cm, args, misconf(err))
		return
	}
	if !w.holdCommits || b.hold == nil {
		b.changed = true
		b.call(cm, args)
		return
	}
	start := b.hold.hold()
	if w.record(b, cm, args) {
		b.changed = true
		b.hold.markWrite(start)
	}
}

// runRefused answers a write command while changes cannot be made durable.
// A decision is still made, as a peek: a denial, or a PEEK, changes nothing
// and is answered as usual; a request that would be admitted gets refuse,
// so nothing is charged that a crash could undo. Every other write command
// gets refuse, as Redis answers every write then.
func (w *Writes) runRefused(b *Batch, cm *core.Command, args [][]byte, refuse string) {
	w.refused.Add(1)
	var peekArgs [][]byte
	var asked bool
	if cm.Peek != nil {
		peekArgs, asked = cm.Peek(args)
	}
	if peekArgs == nil || b.hold == nil {
		b.x.Reject(refuse)
		return
	}
	held := b.hold.holding
	start := b.hold.hold()
	b.call(cm, peekArgs)
	if !asked && admitted(b.hold.since(start)) {
		b.hold.cut(start)
		b.hold.WriteError(refuse)
	}
	if !held {
		b.hold.release("")
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

// Commit makes a batch's changes durable before its replies go out, once
// the batch's last command has run. If the commit fails, every held reply
// of a write command is replaced by -MISCONF: the client learns that its
// request was not taken.
func (w *Writes) Commit(b *Batch) {
	if len(b.rc.PeekPipeline()) > 0 {
		return
	}
	if !b.changed {
		if b.hold != nil {
			b.hold.release("")
		}
		return
	}
	b.changed = false
	var refuse string
	start := time.Now()
	err := w.cfg.Durability.Commit()
	w.commits.Observe(time.Since(start))
	if err != nil {
		refuse = misconf(err)
		w.failedCommits.Add(1)
		w.revert(b.changes)
	} else {
		w.settled()
	}
	clear(b.changes)
	b.changes = b.changes[:0]
	if b.hold != nil && b.hold.holding {
		b.hold.release(refuse)
	} else if refuse != "" {
		w.cfg.Logger.Debug("append-only log commit failed; closing the client without its replies", "client", b.id, "err", refuse)
		_ = b.close() // replies already written cannot be taken back
	}
}
