package server

import "time"

// A command's time. Every decision needs the wall clock, and per-command
// timing and CLIENT LIST's idle= need the monotonic one, and on this
// project's VM each read costs about 50 ns. So a decision takes its wall
// time from where it started on the monotonic clock (c.mark: when its
// batch was read, or when the command before it ended), which timing reads
// anyway, plus the wall clock's offset from the monotonic one. A connection
// reads that offset afresh, with one time.Now, once wallRefresh has passed
// since it last did: a step of the wall clock is seen within that.

// wallRefresh is how long a connection keeps its wall clock offset.
const wallRefresh = time.Millisecond

// batchStart reads the monotonic clock for a batch's first command, when
// nothing did when the batch was read.
func (s *Server) batchStart(c *client) time.Duration { return s.monotonic() }

// commandNow returns the time, in unix nanoseconds, of the command c is
// running: when it started. A configured clock (tests) is read every time.
func (s *Server) commandNow(c *client) int64 {
	if !s.wallClock || c.mark == 0 {
		return s.unixNano()
	}
	if c.WallBase == 0 || c.mark-c.WallAt >= wallRefresh || c.mark < c.WallAt {
		t := time.Now()
		d := t.Sub(s.started) // monotonic: both carry a monotonic reading
		c.WallBase, c.WallAt = t.UnixNano()-int64(d), d
	}
	return c.WallBase + int64(c.mark)
}
