package server

import "time"

// A command's time. Every decision needs the wall clock, and per-command
// timing needs the monotonic one, and on this project's VM each read costs
// about 50 ns: two reads a command were more than a pipelined decision's
// lookup. So a batch reads both clocks once, when its first command starts
// (batchStart), and every command of the batch takes its wall time from
// where it started on the monotonic clock (commandNow): the previous
// command's end, which timing reads anyway. The wall clock is thus read
// afresh every batch, and a step of it is seen from the next batch on.

// batchStart reads the clocks for a batch's first command: it returns the
// command's start (Server.monotonic) and records the wall time at monotonic 0.
func (s *Server) batchStart(c *client) time.Duration {
	if !s.wallClock {
		return s.monotonic()
	}
	t := time.Now()
	d := t.Sub(s.started) // monotonic: both carry a monotonic reading
	c.wallBase = t.UnixNano() - int64(d)
	return d
}

// commandNow returns the time, in unix nanoseconds, of the command c is
// running: when it started, as batchStart and the previous command's timing
// read it. A configured clock (tests) is read every time.
func (s *Server) commandNow(c *client) int64 {
	if !s.wallClock || c.mark == 0 {
		return s.unixNano()
	}
	return c.wallBase + int64(c.mark)
}
