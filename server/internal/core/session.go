package core

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/server/internal/resp"
)

// Session is one connection's state as the pipeline and CLIENT LIST see
// it: who it is, whether it is authenticated, its transaction, the
// command it ran last; the connected sessions are a Registry's. Every
// other concern keeps its own per-connection state in a typed Slot of the
// session, which only that concern can reach (Dragonfly's
// ConnectionState). The fields without atomics or a lock are touched only
// by the connection's goroutine, once it is registered; CLIENT LIST reads
// the rest from others.
type Session struct {
	Out     resp.Writer // where replies go; the pipeline writes its refusals here
	Proto   int         // the protocol version replies use: 2 or 3
	Authed  bool
	Limited bool // its user has ACL rules the Permitter checks
	Peer    bool // another node of the cluster, which proved it

	Multi  bool     // inside MULTI
	Dirty  bool     // a command was refused while queueing, so EXEC aborts
	Queue  []Queued // commands queued by MULTI
	QBytes int64    // bytes of arguments in Queue

	// The decision path's own state, here so that it needs no indirection.
	WallBase int64         // unix nanoseconds at the server's monotonic 0 (the server's commandNow)
	WallAt   time.Duration // when WallBase was read, on the server's monotonic clock
	Mark     time.Duration // when the running command started on that clock: its batch's read, or the end of the command before it; 0 between batches
	Scratch  []byte        // where a decision's reply is built (decide.WriteDecision)

	Cmds    atomic.Int64            // commands run
	LastCmd atomic.Pointer[Command] // the last command run, which the pipeline tries first
	PrevCmd *Command                // the one run before LastCmd, tried second: pipelined pairs (acquire, release) alternate two
	Ahead   *Command                // the command the request about to run names, if found already (decide.Prefetch's lookup); ResolveFor checks its arity only
	QLen    atomic.Int32            // len(Queue) inside MULTI, else -1

	// Who it is, set before it is registered (Registry.Add) and not
	// changed after: CLIENT LIST reads them from other goroutines.
	ID      int64      // Registry.NewID's
	Conn    *resp.Conn // the connection; its Guard is the socket, which Kill closes
	Addr    string     // the client's address
	LAddr   string     // the address it connected to
	Created time.Time

	metaMu sync.Mutex // guards meta
	meta   Meta

	slots [maxSlots]any
}

// Queued is a command that MULTI queued for EXEC.
type Queued struct {
	Cmd  *Command
	Args [][]byte // a copy: a command's own arguments point into the read buffer
}

// Reject refuses a command. Inside MULTI that dooms the transaction, as in Redis.
func (x *Session) Reject(reply string) {
	x.Out.WriteError(reply)
	if x.Multi {
		x.Dirty = true
	}
}

// Null writes the null reply of x's protocol.
func (x *Session) Null() {
	if x.Proto == 3 {
		x.Out.WriteRaw([]byte("_\r\n"))
		return
	}
	x.Out.WriteNull()
}

// maxSlots is how many concerns may keep state in a session.
const maxSlots = 6

// Slot is one concern's per-connection state in every Session, of type T.
// Only a holder of the Slot reaches it, and it reaches it typed: the
// concern that made the Slot keeps it to itself.
type Slot[T any] struct{ i int }

// Slots hands out a table's slots.
type Slots struct{ n int }

// NewSlot returns a new slot of type T. More than maxSlots is a
// programmer error.
func NewSlot[T any](s *Slots) Slot[T] {
	if s.n == maxSlots {
		panic("core: more than maxSlots slots")
	}
	s.n++
	return Slot[T]{i: s.n - 1}
}

// Get returns x's state in the slot, or nil if none was set.
func (k Slot[T]) Get(x *Session) *T {
	v, _ := x.slots[k.i].(*T)
	return v
}

// Set puts v in x's slot.
func (k Slot[T]) Set(x *Session, v *T) { x.slots[k.i] = v }

// HideArgs is the secret attribute that hides every argument: AUTH's, and
// the node-to-node commands', whose payloads are a handshake's proofs or
// whole slots' state.
func HideArgs(args [][]byte) Hidden { return Hidden{From: 1, To: len(args)} }

// HideNone hides nothing from MONITOR, for a command only the slow log
// keeps to its name (CONFIG, ACL: MONITOR does not show CONFIG SET, the
// one that takes a password, as it is administrative).
func HideNone([][]byte) Hidden { return Hidden{} }

// MaxClientName bounds a client's name and its library's name and
// version: CLIENT LIST repeats them for every client, and 200 clients with
// 200 KB names made each CLIENT LIST 40 MB (issue 25's finding 5).
const MaxClientName = 1024

// Replies to a client name CLIENT SETNAME, SETINFO or HELLO SETNAME refuses.
const (
	ErrClientName = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrNameLong   = "ERR Client names and library names and versions are limited to 1024 bytes"
)

// ValidName reports whether a client or library name is printable ASCII
// with no spaces, as Redis requires. An empty name clears it.
func ValidName(b []byte) bool {
	for _, ch := range b {
		if ch <= ' ' || ch > '~' {
			return false
		}
	}
	return true
}
