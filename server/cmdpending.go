package server

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/observe"
)

// pending holds a connection's command and decision counts not yet added to
// the server's shared counters. Those counters are atomics every connection
// adds to, so on two cores each add moved a cache line between them: five
// adds a pipelined decision. A connection adds up its own counts while it
// runs one command after another, and adds them to the shared counters in
// one go when its batch ends, before the batch's replies go out, or when
// another command runs: so whoever has seen a reply, INFO run after the
// command on the same connection included, sees it counted.
type pending struct {
	cm        *core.Command // whose runs runs counts
	runs      observe.Runs  // runs of cm
	decisions [decisionSlots]struct{ allowed, denied int32 }
	decided   bool // decisions holds counts
}

// observe counts a run of cm that took d.
func (p *pending) observe(cm *core.Command, d time.Duration) {
	if p.cm != cm {
		p.flushRuns()
		p.cm = cm
	}
	p.runs.Observe(d)
}

// decision counts a decision in slot.
func (p *pending) decision(slot int, allowed bool) {
	if allowed {
		p.decisions[slot].allowed++
	} else {
		p.decisions[slot].denied++
	}
	p.decided = true
}

// flush adds every pending count to the shared counters of s.
func (p *pending) flush(s *Server) {
	p.flushRuns()
	if !p.decided {
		return
	}
	for i := range p.decisions {
		v := &p.decisions[i]
		if v.allowed != 0 {
			s.decisions[i].allowed.Add(int64(v.allowed))
		}
		if v.denied != 0 {
			s.decisions[i].denied.Add(int64(v.denied))
		}
		*v = struct{ allowed, denied int32 }{}
	}
	p.decided = false
}

// flushRuns adds the pending runs to their command's counters.
func (p *pending) flushRuns() {
	if p.cm != nil {
		p.runs.Flush(p.cm.Stats)
	}
}
