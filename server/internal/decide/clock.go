package decide

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// A command's time. Every decision needs the wall clock, and per-command
// timing and CLIENT LIST's idle= need the monotonic one, and on this
// project's VM each read costs about 50 ns. So a decision takes its wall
// time from where it started on the monotonic clock (the server's mark:
// when its batch was read, or when the command before it ended), which
// timing reads anyway, plus the wall clock's offset from the monotonic
// one, kept in the session (WallBase, WallAt). A connection reads that
// offset afresh, with one time.Now, once wallRefresh has passed since it
// last did: a step of the wall clock is seen within that.

// wallRefresh is how long a connection keeps its wall clock offset.
const wallRefresh = time.Millisecond

// Clock is the time the decision commands decide at. The zero value is
// not usable; the server sets it once, before it serves.
type Clock struct {
	Wall    bool             // Read is time.Now: a command may take its time from its mark
	Started time.Time        // the monotonic 0 marks count from
	Read    func() time.Time // the configured clock (tests, DEBUG SET-CLOCK)
}

// At returns the time, in unix nanoseconds, of the command x is running,
// which started at mark on the clock since Started (0: not known). A
// configured clock is read every time.
func (k *Clock) At(x *core.Session, mark time.Duration) int64 {
	if !k.Wall || mark == 0 {
		return k.Read().UnixNano()
	}
	if x.WallBase == 0 || mark-x.WallAt >= wallRefresh || mark < x.WallAt {
		t := time.Now()
		d := t.Sub(k.Started) // monotonic: both carry a monotonic reading
		x.WallBase, x.WallAt = t.UnixNano()-int64(d), d
	}
	return x.WallBase + int64(mark)
}
