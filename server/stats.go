package server

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/decide"
)

// policyStats are one policy's counters, kept beside it under its name, so
// their number is bounded by the number of policies, never by keys.
type policyStats struct {
	decide.Verdicts
	shadowDenied atomic.Int64                  // denials a SHADOW policy admitted
	ruleDenied   [policy.MaxRules]atomic.Int64 // denials by binding rule index
}

// countDecision counts one decided request. o is the decision of r; for a
// policy, denied is before SHADOW turned it into an admission.
func (s *Server) countDecision(r *request, o *outcome, denied bool) {
	if r.peek {
		return
	}
	switch r.op {
	case opThrottle:
		s.countVerdict(r, decide.SlotThrottle, !o.throttle.Limited)
	case opCheck:
		s.countVerdict(r, decide.SlotCheck, !denied)
		if ps := r.pstats; ps != nil {
			ps.Count(!denied)
			if denied {
				ps.ruleDenied[o.rule].Add(1)
				if r.policy.Shadow {
					ps.shadowDenied.Add(1)
				}
			}
		}
	default:
		if k := int(r.params.Kind); k > 0 && k < decide.SlotCheck {
			s.countVerdict(r, k, o.d.Allowed)
		}
	}
}

// countVerdict counts a decision in slot: with the pending counts of the
// client that asked, if one did (see decide.Tally).
func (s *Server) countVerdict(r *request, slot int, allowed bool) {
	if r.by != nil {
		r.by.dec.Tally.Count(slot, allowed)
		return
	}
	s.dec.Counts[slot].Count(allowed)
}
