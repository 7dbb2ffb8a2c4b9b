package multi

import "github.com/rlstore/rlstore/server/internal/core"

// MULTI/EXEC isolation, stated honestly: EXEC runs the queued commands one
// after another on this connection, with nothing else of this client's in
// between. Each command is atomic on its key, as every command is, but the
// whole EXEC is not isolated from other clients: their commands on the same
// keys may run between two of the queued ones. There is no WATCH. As in
// Redis, a command refused while queueing (unknown, wrong arity, NOAUTH, not
// allowed in MULTI) makes EXEC abort with EXECABORT, and a command that fails
// when EXEC runs it gets its error in EXEC's reply while the others run.
// The pipeline queues (core.Pipeline); this package starts, runs and ends
// a transaction.

// Replies of the transaction commands, in Redis's words where Redis has them.
const (
	ErrMultiNested = "ERR MULTI calls can not be nested"
	ErrExecNoMulti = "ERR EXEC without MULTI"
	ErrDiscNoMulti = "ERR DISCARD without MULTI"
	ErrExecAbort   = "EXECABORT Transaction discarded because of previous errors."

	ErrWatchInMulti = "ERR WATCH inside MULTI is not allowed"
	ErrNoWatch      = "ERR WATCH is not supported: each rlstore command is atomic on its key. For all-or-nothing decisions over several limits use RL.CHECK with a policy; MULTI/EXEC runs commands in order"
)

// Delegate is what EXEC needs of the server, set once at New.
type Delegate interface {
	// Elsewhere runs the transaction q at the node that owns its keys,
	// when that is not this one, and reports whether it replied (also
	// with CROSSSLOT or TRYAGAIN). Without a cluster it is always false.
	Elsewhere(x *core.Session, q []core.Queued) bool
	// Run runs one queued command as the pipeline runs any command.
	Run(x *core.Session, cm *core.Command, args [][]byte)
	// InExec says EXEC's reply has begun (on) or ended: client-side
	// caching's pushes wait for its end.
	InExec(x *core.Session, on bool)
}

// Transactions are the transaction commands over a Delegate.
type Transactions struct{ d Delegate }

// New returns the transaction commands, which run queues through d.
func New(d Delegate) *Transactions { return &Transactions{d: d} }

// Commands are WATCH, UNWATCH, MULTI, EXEC and DISCARD as table entries,
// in the order the server registers them.
func (t *Transactions) Commands() []core.Command {
	return []core.Command{
		{Name: "watch", Arity: -2, Flags: core.FlagNoQueue, Run: watch, FirstKey: 1, LastKey: -1, KeyStep: 1, Group: "transactions", Summary: "Not supported: answers an error naming RL.CHECK"},
		{Name: "unwatch", Arity: 1, Run: unwatch, Group: "transactions", Summary: "Replies OK: nothing is ever watched"},
		{Name: "multi", Arity: 1, Flags: core.FlagNoQueue | core.FlagKeepsCaching | core.FlagOpensTx, Run: multi, Group: "transactions", Summary: "Starts queueing commands for EXEC"},
		{Name: "exec", Arity: 1, Flags: core.FlagNoQueue | core.FlagBarrier | core.FlagRunsTx, Run: t.exec, Group: "transactions", Summary: "Runs the queued commands in order"},
		{Name: "discard", Arity: 1, Flags: core.FlagNoQueue, Run: discard, Group: "transactions", Summary: "Drops the queued commands"},
	}
}

// watch runs at once inside MULTI, as Redis's does, to answer Redis's
// error there without dooming the transaction.
func watch(x *core.Session, args [][]byte) {
	if x.Multi {
		x.Out.WriteError(ErrWatchInMulti)
		return
	}
	x.Out.WriteError(ErrNoWatch)
}

func unwatch(x *core.Session, args [][]byte) { x.Out.WriteString("OK") }

func multi(x *core.Session, args [][]byte) {
	if x.Multi {
		x.Out.WriteError(ErrMultiNested) // as in Redis, this does not doom the transaction
		return
	}
	x.Multi = true
	x.QLen.Store(0)
	x.Out.WriteString("OK")
}

func (t *Transactions) exec(x *core.Session, args [][]byte) {
	if !x.Multi {
		x.Out.WriteError(ErrExecNoMulti)
		return
	}
	q, dirty := x.Queue, x.Dirty
	end(x)
	if dirty {
		x.Out.WriteError(ErrExecAbort)
		return
	}
	if t.d.Elsewhere(x, q) {
		return
	}
	x.Out.WriteArray(len(q))
	t.d.InExec(x, true)
	for _, e := range q {
		t.d.Run(x, e.Cmd, e.Args)
	}
	t.d.InExec(x, false)
}

func discard(x *core.Session, args [][]byte) {
	if !x.Multi {
		x.Out.WriteError(ErrDiscNoMulti)
		return
	}
	end(x)
	x.Out.WriteString("OK")
}

// end leaves MULTI. The queue's array is not reused, so EXEC may still run what it held.
func end(x *core.Session) {
	x.Multi, x.Dirty, x.Queue, x.QBytes = false, false, nil, 0
	x.QLen.Store(-1)
}
