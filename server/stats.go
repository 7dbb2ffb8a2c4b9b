package server

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
)

// decisionSlot numbers the decision commands for their counters:
// CL.THROTTLE, the native RL.<kind> commands by kind, then RL.CHECK, then
// the lease and reservation commands (leasestats.go).
const (
	slotThrottle  = 0
	slotCheck     = int(window.KindLeaky) + 1
	decisionSlots = leaseSlots
)

// decisionName is the command name of a decision slot.
func decisionName(slot int) string {
	switch slot {
	case slotThrottle:
		return "cl.throttle"
	case slotCheck:
		return "rl.check"
	}
	if slot > slotCheck {
		return leaseSlotName(slot)
	}
	return "rl." + window.Kind(slot).String()
}

// verdicts count decisions allowed and denied. Peeks are not counted, as
// the store does not count them.
type verdicts struct {
	allowed, denied atomic.Int64
}

func (v *verdicts) count(allowed bool) {
	if allowed {
		v.allowed.Add(1)
	} else {
		v.denied.Add(1)
	}
}

// policyStats are one policy's counters, kept beside it under its name, so
// their number is bounded by the number of policies, never by keys.
type policyStats struct {
	verdicts
	shadowDenied atomic.Int64                  // denials a SHADOW policy admitted
	ruleDenied   [policy.MaxRules]atomic.Int64 // denials by binding rule index
}

// decisionStats are the server's decision counters.
type decisionStats [decisionSlots]verdicts

// countDecision counts one decided request. o is the decision of r; for a
// policy, denied is before SHADOW turned it into an admission.
func (s *Server) countDecision(r *request, o *outcome, denied bool) {
	if r.peek {
		return
	}
	switch r.op {
	case opThrottle:
		s.countVerdict(r, slotThrottle, !o.throttle.Limited)
	case opCheck:
		s.countVerdict(r, slotCheck, !denied)
		if ps := r.pstats; ps != nil {
			ps.count(!denied)
			if denied {
				ps.ruleDenied[o.rule].Add(1)
				if r.policy.Shadow {
					ps.shadowDenied.Add(1)
				}
			}
		}
	default:
		if k := int(r.params.Kind); k > 0 && k < slotCheck {
			s.countVerdict(r, k, o.d.Allowed)
		}
	}
}

// countVerdict counts a decision in slot: with the pending counts of the
// client that asked, if one did (see pending).
func (s *Server) countVerdict(r *request, slot int, allowed bool) {
	if r.by != nil {
		r.by.pend.decision(slot, allowed)
		return
	}
	s.decisions[slot].count(allowed)
}
