package cluster

import (
	"slices"
	"time"

	"github.com/hashicorp/memberlist"
)

// A node that restarts under the same name (a redeploy) comes back as a
// new process, which memberlist knows by that name only. Gossip about
// the process it replaced can still be travelling: the old process's
// leave, or a push/pull from a member that has not heard of the new one.
// memberlist applies such a report to the new process when its
// incarnation number is not lower, and the new process starts its count
// afresh; it refutes the report as soon as it hears it, and is alive
// again a gossip round or two later. Acted on at once, that flap moves the
// node's slots away and back within milliseconds: the other node serves
// them for a moment from what it has, and its decisions there are lost
// when they come back (TestRollingRestartKeepsLimits).
//
// So a departure reported within flapGrace of a member's (re)appearance,
// which the member did not announce with its own leave message, waits
// flapWait; it then counts only if memberlist still has the member gone.
// Failure detection cannot declare a member dead that soon after it
// appeared anyway (a probe, then the suspicion), so only a crash right
// after a start is seen flapWait later.

// flapGrace is how long after a member appears a departure not announced
// by the member itself may be stale gossip: a probe and the suspicion.
func (m *Membership) flapGrace() time.Duration {
	t := m.cfg.Timing
	return t.Probe * time.Duration(t.Suspicion+1)
}

// flapWait is how long such a departure waits for the member's refutation
// to arrive: a few gossip rounds.
func (m *Membership) flapWait() time.Duration { return 4 * m.cfg.Timing.Gossip }

// deferDeparture reports whether n's departure waits for a refutation,
// and if so checks it again after flapWait.
func (m *Membership) deferDeparture(n *memberlist.Node) bool {
	m.mu.Lock()
	_, said := m.leaving[n.Name]
	at, ok := m.joined[n.Name]
	wait := ok && !said && !m.closed && time.Since(at) < m.flapGrace()
	m.mu.Unlock()
	if !wait {
		return false
	}
	c := *n
	c.Addr, c.Meta = slices.Clone(n.Addr), slices.Clone(n.Meta)
	m.log.Info("cluster: a member that just (re)joined was reported gone; waiting for it to refute", "node", n.Name, "wait", m.flapWait())
	time.AfterFunc(m.flapWait(), func() { m.recheckDeparture(&c) })
	return true
}

// recheckDeparture records n's departure, deferred by deferDeparture,
// unless memberlist has it alive again.
func (m *Membership) recheckDeparture(n *memberlist.Node) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return
	}
	if m.aliveInGossip(n.Name) {
		m.refuted.Add(1)
		m.log.Info("cluster: the member refuted the report that it was gone", "node", n.Name)
		return
	}
	m.departedNow(n)
}

// aliveInGossip reports whether memberlist has name alive (or suspect).
func (m *Membership) aliveInGossip(name string) bool {
	for _, n := range m.ml.Members() {
		if n.Name == name {
			return true
		}
	}
	return false
}
