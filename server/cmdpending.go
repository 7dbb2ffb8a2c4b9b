package server

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/observe"
)

// pending holds a connection's command counts (and, in its decide.Tally,
// its decision counts) not yet added to
// the server's shared counters. Those counters are atomics every connection
// adds to, so on two cores each add moved a cache line between them: five
// adds a pipelined decision. A connection adds up its own counts while it
// runs one command after another, and adds them to the shared counters in
// one go when its batch ends, before the batch's replies go out, or before
// another command that may read them runs (before): so whoever has seen a
// reply, INFO run after the command on the same connection included, sees
// it counted. It holds the runs of up to pendCmds commands: a pipeline of
// pairs (RL.ACQUIRE, RL.RELEASE) alternates two, and flushing at each
// switch cost a pair 8 atomic adds on lines every connection shares.
type pending struct {
	cms  [pendCmds]*core.Command // whose runs runs counts: cms[:n]
	runs [pendCmds]observe.Runs
	n    int
	last *core.Command // the command observed last
}

// pendCmds is how many commands' runs a connection holds before it adds them up.
const pendCmds = 4

// before readies c's counts for a run of cm: they must show to it unless
// it is the command that ran last, or one of the decision seam's
// (flagAnnounces: decisions, leases, reservations), which read their keys
// and no counter.
func (s *Server) before(c *client, cm *core.Command) {
	if c.pend.last != cm && cm.Flags&flagAnnounces == 0 {
		s.flushPending(c)
	}
}

// observe counts a run of cm that took d.
func (p *pending) observe(cm *core.Command, d time.Duration) {
	p.last = cm
	for i := range p.n {
		if p.cms[i] == cm {
			p.runs[i].Observe(d)
			return
		}
	}
	if p.n == pendCmds {
		p.flushRuns()
	}
	p.cms[p.n] = cm
	p.runs[p.n].Observe(d)
	p.n++
}

// flushPending adds every count c holds to the shared counters of s.
func (s *Server) flushPending(c *client) {
	c.pend.flushRuns()
	c.dec.Tally.Flush(&s.dec.Counts)
}

// flushRuns adds the pending runs to their commands' counters.
func (p *pending) flushRuns() {
	for i := range p.n {
		p.runs[i].Flush(p.cms[i].Stats)
		p.cms[i] = nil
	}
	p.n = 0
}
