package durable

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// ErrNoPersistence is the reply to a save without persistence (SAVE,
// BGSAVE, SHUTDOWN SAVE).
const ErrNoPersistence = "ERR persistence is not configured: state is in memory only, so there is nothing to save"

// Replies of the persistence commands.
const (
	errSaving = "ERR Background save already in progress"
	errSyntax = "ERR syntax error"
)

// Commands are SAVE, BGSAVE and LASTSAVE. Their Redis flags and ACL
// categories come from the server's spec table, as before they moved.
func (w *Writes) Commands() []core.Command {
	return []core.Command{
		{Name: "save", Arity: 1, Flags: core.FlagAdmin | core.FlagNoTx, Run: w.save, Group: "server", Summary: "Saves the store, if persistence is configured"},
		{Name: "bgsave", Arity: -1, Flags: core.FlagAdmin, Run: w.bgSave, Group: "server", Summary: "Saves the store in the background, if persistence is configured"},
		{Name: "lastsave", Arity: 1, Run: w.lastSave, Group: "server", Summary: "Returns the unix time of the last successful save, 0 if none"},
	}
}

// save is SAVE. It waits for a snapshot already being written, then writes its own.
func (w *Writes) save(x *core.Session, args [][]byte) {
	if w.cfg.Durability == nil {
		x.Out.WriteError(ErrNoPersistence)
		return
	}
	if err := w.Snapshot(); err != nil {
		x.Out.WriteError("ERR " + err.Error())
		return
	}
	x.Out.WriteString("OK")
}

// bgSave is BGSAVE [SCHEDULE]. A failure shows in the log and INFO
// persistence, as in Redis. SCHEDULE does not queue: a save under way
// already holds every change made before it finishes in its log.
func (w *Writes) bgSave(x *core.Session, args [][]byte) {
	switch {
	case len(args) > 2 || (len(args) == 2 && !core.EqualFold(args[1], "schedule")):
		x.Out.WriteError(errSyntax)
	case w.cfg.Durability == nil:
		x.Out.WriteError(ErrNoPersistence)
	case !w.cfg.Durability.BackgroundSnapshot():
		x.Out.WriteError(errSaving)
	default:
		x.Out.WriteString("Background saving started")
	}
}

// lastSave is LASTSAVE: the unix time of the last snapshot written or
// loaded at start, 0 if none.
func (w *Writes) lastSave(x *core.Session, args [][]byte) {
	var at int64
	if w.cfg.Durability != nil {
		at = UnixOrZero(w.cfg.Durability.Stats().LastSave)
	}
	x.Out.WriteInt64(at)
}

// UnixOrZero is t in unix seconds, 0 for the zero time.
func UnixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// Snapshot takes a snapshot and logs the outcome.
func (w *Writes) Snapshot() error {
	start := time.Now()
	if err := w.cfg.Durability.Snapshot(); err != nil {
		w.cfg.Logger.Error("save failed", "err", err)
		return err
	}
	w.cfg.Logger.Info("saved", "took", time.Since(start).Round(time.Millisecond))
	return nil
}
