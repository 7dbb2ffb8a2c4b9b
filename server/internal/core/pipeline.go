package core

import "github.com/rlstore/rlstore/internal/wire"

// Replies of the pipeline, in Redis's words.
const (
	ErrNoAuth     = "NOAUTH Authentication required."
	ErrNotInMulti = "ERR Command not allowed inside a transaction"
	ErrQueueSize  = "ERR MULTI queue is larger than max-request-bytes"
)

// Permitter decides a user's ACL rules: it returns "" if x may run cm with
// args, or the NOPERM reply. It is asked only for a Limited session.
type Permitter interface {
	Permit(x *Session, cm *Command, args [][]byte) string
}

// Router sends a keyed command to the node that owns its keys, in a
// cluster. It returns false if the command is to run here (it runs it
// itself: the handoff's barrier wraps the run), true if it went elsewhere.
type Router interface {
	Route(x *Session, cm *Command, args [][]byte) (forwarded bool)
}

// Runner runs a command that passed the pipeline's checks: it counts and
// times it, and runs a write under the durability's rules.
type Runner interface {
	Run(x *Session, cm *Command, args [][]byte)
}

// Observer is told of a command forwarded to another node, which MONITOR
// and CLIENT TRACKING still see; Watching says whether anyone observes, so
// that the pipeline asks it nothing otherwise.
type Observer interface {
	Watching() bool
	Forwarded(x *Session, cm *Command, args [][]byte)
}

// Pipeline is the one path every command takes, in Redis's processCommand
// order: resolve the name, check the arity, auth, the ACL and MULTI, route
// it in a cluster, run it. Its delegates are set once, before it serves.
type Pipeline struct {
	Table         *Table
	Slots         Slots
	MaxQueueBytes int64 // the most bytes of arguments MULTI queues (max-request-bytes)

	Permit  Permitter
	Route   Router // nil: not in a cluster
	Run     Runner
	Observe Observer
}

// Dispatch checks a command as Redis does, in Redis's order (name, arity,
// then auth), and runs it or queues it for EXEC.
func (p *Pipeline) Dispatch(x *Session, args [][]byte) {
	cm, reply := p.Table.ResolveFor(x, args)
	switch {
	case cm == nil:
		x.Reject(reply)
	case !x.Authed && cm.Flags&FlagNoAuth == 0:
		cm.Stats.Rejected.Add(1)
		x.Reject(ErrNoAuth)
	case x.Limited && cm.Flags&FlagNoAuth == 0 && p.refused(x, cm, args):
	case x.Multi && cm.Flags&FlagNoQueue == 0:
		p.enqueue(x, cm, args)
	case p.Route == nil, x.Multi && cm.FirstKey > 0: // in MULTI only FlagNoQueue commands get here; the keyed one, WATCH, answers itself
		p.Run.Run(x, cm, args)
	case p.Route.Route(x, cm, args) && p.Observe.Watching(): // forwarded: MONITOR and CLIENT TRACKING still see it
		p.Observe.Forwarded(x, cm, args)
	}
}

// refused refuses cm with -NOPERM, and says so, if x's user may not run it
// on its keys.
func (p *Pipeline) refused(x *Session, cm *Command, args [][]byte) bool {
	reply := p.Permit.Permit(x, cm, args)
	if reply == "" {
		return false
	}
	cm.Stats.Rejected.Add(1)
	x.Reject(reply)
	return true
}

// enqueue queues a command for EXEC. The queue is capped like a request:
// otherwise a client could queue without limit. Each argument counts with
// its smallest framing, as in the request, so that empty arguments, which
// the server holds a copy and a slice header of, count too.
func (p *Pipeline) enqueue(x *Session, cm *Command, args [][]byte) {
	size := int64(0)
	for _, a := range args {
		size += wire.MinBulk + int64(len(a))
	}
	switch {
	case cm.Flags&FlagNoTx != 0:
		x.Reject(ErrNotInMulti)
	case x.QBytes+size > p.MaxQueueBytes:
		x.Reject(ErrQueueSize)
	default:
		x.Queue = append(x.Queue, Queued{Cmd: cm, Args: CloneArgs(args)})
		x.QBytes += size
		x.QLen.Store(int32(len(x.Queue)))
		x.Out.WriteString("QUEUED")
	}
}

// CloneArgs copies args, which point into the read buffer.
func CloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}
