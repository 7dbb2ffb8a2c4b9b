package server

import (
	"runtime/debug"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
)

// clientOf returns the server's client whose session x is.
func (s *Server) clientOf(x *core.Session) *client { return s.clientSlot.Get(x) }

// pipeline is the server as the pipeline's delegates core.Runner and
// core.Observer (the Permitter is auth.Users, the Router route.Router), as
// the router's route.Runner, and as EXEC's multi.Delegate.
type pipeline struct{ s *Server }

func (p pipeline) Run(x *core.Session, cm *core.Command, args [][]byte) {
	p.s.run(p.s.clientOf(x), cm, args)
}

// Call runs cm uncounted (route.Runner): see call.
func (p pipeline) Call(x *core.Session, cm *core.Command, args [][]byte) {
	p.s.call(p.s.clientOf(x), cm, args)
}

func (p pipeline) Elsewhere(x *core.Session, q []core.Queued) bool { return p.s.rt.Elsewhere(x, q) }

func (p pipeline) InExec(x *core.Session, on bool) { p.s.clientOf(x).ob.SetInExec(on) }

func (p pipeline) Watching() bool { return p.s.obs.Active() }

func (p pipeline) Forwarded(x *core.Session, cm *core.Command, args [][]byte) {
	p.s.obs.AfterForward(&p.s.clientOf(x).ob, cm, args)
}

// call runs cm on c: a command declared in the server's form directly, as
// its adapted core.RunFunc would after finding c in the session's slot
// again (about 20 instructions a decision, measured with callgrind).
func (s *Server) call(c *client, cm *core.Command, args [][]byte) {
	if cm.ID < len(s.runs) {
		if run := s.runs[cm.ID]; run != nil {
			run(s, c, args)
			return
		}
	}
	cm.Run(&c.Session, args)
}

// adapt makes a command of the server's form a core.RunFunc.
func (s *Server) adapt(run func(s *Server, c *client, args [][]byte)) core.RunFunc {
	if run == nil {
		return nil
	}
	return func(x *core.Session, args [][]byte) { run(s, s.clientOf(x), args) }
}

// run runs cm, counting it for INFO, CLIENT LIST, SLOWLOG and /metrics.
func (s *Server) run(c *client, cm *core.Command, args [][]byte) {
	s.before(c, cm) // the counts so far must show to a command that may read them

	if last := c.LastCmd.Load(); last != cm { // a load is a plain read; a store is a locked one
		c.PrevCmd = last
		c.LastCmd.Store(cm)
	}
	c.Cmds.Add(1)
	start, errs := c.Mark, c.errs
	if start == 0 {
		start = s.batchStart(c)
		c.Mark = start
	}
	outer := c.running // a command RL.HOP runs is run inside it
	c.running = cm     // not a deferred ran: a defer cost ~30 instructions a command, and only a panic needs it (recoverPanic)
	if s.obs.Active() {
		s.obs.BeforeRun(&c.ob, cm, args)
	}
	if reply := cm.KeyTooLong(args, s.cfg.MaxKeyBytes); reply != "" {
		c.conn.WriteError(reply)
	} else if cm.Flags&core.FlagWrite != 0 && s.cfg.Durability != nil {
		s.dur.Run(&c.dur, cm, args)
	} else {
		s.call(c, cm, args)
	}
	if s.obs.Active() {
		s.obs.AfterRun(&c.ob, cm, args)
	}
	s.ran(c, cm, args, start, errs)
	c.running = outer
}

// ran records a run of cm that started at start (s.monotonic): its time,
// and whether it replied with an error (c.errs grew past errs). A deferred
// call costs no allocation, and the counters are atomics of cm's own.
func (s *Server) ran(c *client, cm *core.Command, args [][]byte, start time.Duration, errs int64) {
	end := s.monotonic()
	c.Mark = end // the next command of the batch starts where this one ended: one clock read a command
	d := end - start
	c.pend.Observe(cm, d)
	if c.errs != errs {
		cm.Stats.Failed.Add(1)
	}
	if slow, spiked := s.slow.Slow(d), s.slow.Spiked(d); slow || spiked {
		s.recordSlow(c, cm, args, d, slow, spiked)
	}
}

// before readies c's counts for a run of cm: they must show to it unless
// it is the command that ran last, or one of the decision seam's
// (core.FlagAnnounces: decisions, leases, reservations), which read their keys
// and no counter.
func (s *Server) before(c *client, cm *core.Command) {
	if c.pend.Last() != cm && cm.Flags&core.FlagAnnounces == 0 {
		s.flushPending(c)
	}
}

// flushPending adds every count c holds, its command runs
// (observe.Pending) and its decisions (decide.Tally), to the shared
// counters.
func (s *Server) flushPending(c *client) {
	c.pend.Flush()
	c.dec.Tally.Flush(&s.dec.Counts)
}

// batchStart reads the monotonic clock for a batch's first command, when
// nothing did when the batch was read.
func (s *Server) batchStart(c *client) time.Duration { return s.monotonic() }

// commandNow returns the time, in unix nanoseconds, of the command c is
// running: when it started (decide.Clock).
func (s *Server) commandNow(c *client) int64 { return s.clock.At(&c.Session, c.Mark) }

// monotonic is the time since the server was made, from the monotonic
// clock alone: time.Since reads one clock where time.Now reads two, which
// is most of what timing every command costs (measured here: ~50 ns a
// time.Now, 3 reads were +75 ns a pipelined PING).
func (s *Server) monotonic() time.Duration { return time.Since(s.started) }

// recoverPanic turns a command's panic into an error reply. The connection
// is closed after it, because the command may have written part of a reply
// that cannot be taken back; every other client is served on.
func (s *Server) recoverPanic(c *client, args [][]byte) {
	r := recover()
	if r == nil {
		return
	}
	if cm := c.running; cm != nil { // it panicked in Server.run: record the run as ran would have
		c.running = nil
		s.ran(c, cm, args, c.Mark, c.errs)
	}
	name := core.QuoteArg(args[0], core.MaxName)
	s.log.Error("command panicked; closing its connection",
		"client", c.ID, "addr", c.Addr, "cmd", name, "panic", r, "stack", string(debug.Stack()))
	c.conn.WriteError("ERR internal error running '" + name + "', closing the connection; see the server log")
	s.closeAfterReply(c)
}

// parseInt parses a base-10 int64 as strictly as Redis's string2ll (see policy.ParseInt).
func parseInt(b []byte) (int64, bool) { return policy.ParseInt(b) }

// The argument errors every command shares with the parser of algorithm
// parameters (package policy).
const (
	errArgNotInt = policy.ErrNotInt
	errArgSyntax = policy.ErrSyntax
)

// recordSlow logs c's run of cm that took d in the slow log, if it was
// slow enough, and as a spike for the latency monitor, if it was one (ran
// asks s.slow which, two atomic loads). A secret command (cm.Secret) keeps
// only its name.
func (s *Server) recordSlow(c *client, cm *core.Command, args [][]byte, d time.Duration, slow, spiked bool) {
	if slow {
		s.slow.Add(args, cm.Secret != nil, d, c.Addr, c.Meta().Name)
	}
	if spiked {
		s.slow.AddSpike(d)
	}
}

// decideFront is the server as the decision commands' decide.Front, and,
// with regions, as the seam's decide.Regions: each answer but Owner is
// region.go's.
type decideFront struct{ s *Server }

func (f decideFront) RefusedGlobal(x *core.Session, key []byte, cmd string) bool {
	return f.s.refusedGlobal(f.s.clientOf(x), key, cmd)
}

func (f decideFront) RefusedGlobalPolicy(x *core.Session, key, name []byte) bool {
	return f.s.refusedGlobalPolicy(f.s.clientOf(x), key, name)
}

func (f decideFront) Owner() string {
	if f.s.ho == nil {
		return ""
	}
	return f.s.ho.View().Self
}

func (f decideFront) Global(key []byte) bool { return f.s.reg.Global(key) }

func (f decideFront) InfoSplit(key []byte) []core.Pair { return pairsOf(f.s.reg.InfoSplit(key)) }

func (f decideFront) Decide(key []byte, r decide.Request) (decide.Outcome, bool, error) {
	return f.s.decideGlobal(key, &r)
}
