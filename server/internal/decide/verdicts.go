package decide

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/policy"
)

// PolicyStats are one policy's counters, kept beside it under its name, so
// their number is bounded by the number of policies, never by keys.
type PolicyStats struct {
	Verdicts
	ShadowDenied atomic.Int64                  // denials a SHADOW policy admitted
	RuleDenied   [policy.MaxRules]atomic.Int64 // denials by binding rule index
}

// countDecision counts one decided request. o is the decision of r; for a
// policy, denied is before SHADOW turned it into an admission.
func (d *Decisions) countDecision(r *Request, o *Outcome, denied bool) {
	if r.Peek {
		return
	}
	switch r.Op {
	case OpThrottle:
		d.countVerdict(r, SlotThrottle, !o.Throttle.Limited)
	case OpCheck:
		d.countVerdict(r, SlotCheck, !denied)
		if ps := r.Stats; ps != nil {
			ps.Count(!denied)
			if denied {
				ps.RuleDenied[o.Rule].Add(1)
				if r.Policy.Shadow {
					ps.ShadowDenied.Add(1)
				}
			}
		}
	default:
		if k := int(r.Params.Kind); k > 0 && k < SlotCheck {
			d.countVerdict(r, k, o.D.Allowed)
		}
	}
}

// countVerdict counts a decision in slot: with the pending counts of the
// client that asked, if its request carries them (run1 and decideAlias
// set Request.conn), else in the shared counts. It inlines into
// countDecision.
func (d *Decisions) countVerdict(r *Request, slot int, allowed bool) {
	if c := r.conn; c != nil {
		c.Tally.Count(slot, allowed)
		return
	}
	d.Counts[slot].Count(allowed)
}
