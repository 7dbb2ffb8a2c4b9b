package observe

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// Pending holds a connection's command runs not yet added to their
// commands' counters (core.Stats). Those counters are atomics every
// connection adds to, so on two cores each add moved a cache line between
// them: five adds a pipelined decision. A connection adds up its own runs
// while it runs one command after another, and the server adds them to
// the shared counters in one go (Flush) when its batch ends, before the
// batch's replies go out, or before another command that may read them
// runs: so whoever has seen a reply, INFO run after the command on the
// same connection included, sees it counted. It holds the runs of up to
// pendCmds commands: a pipeline of pairs (RL.ACQUIRE, RL.RELEASE)
// alternates two, and flushing at each switch cost a pair 8 atomic adds
// on lines every connection shares. Only the connection's goroutine uses it.
type Pending struct {
	cms  [pendCmds]*core.Command // whose runs runs counts: cms[:n]
	runs [pendCmds]Runs
	n    int
	last *core.Command // the command observed last
}

// pendCmds is how many commands' runs a connection holds before it adds them up.
const pendCmds = 4

// Last is the command observed last, or nil.
func (p *Pending) Last() *core.Command { return p.last }

// Observe counts a run of cm that took d.
func (p *Pending) Observe(cm *core.Command, d time.Duration) {
	p.last = cm
	for i := range p.n {
		if p.cms[i] == cm {
			p.runs[i].Observe(d)
			return
		}
	}
	if p.n == pendCmds {
		p.Flush()
	}
	p.cms[p.n] = cm
	p.runs[p.n].Observe(d)
	p.n++
}

// Flush adds the pending runs to their commands' counters.
func (p *Pending) Flush() {
	for i := range p.n {
		p.runs[i].Flush(p.cms[i].Stats)
		p.cms[i] = nil
	}
	p.n = 0
}
