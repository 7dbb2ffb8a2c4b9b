package decide

import (
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
)

// RuleKeys returns the internal keys of p's rules, and of its penalty if it
// has one, for key. Unlike RL.CHECK's seam it allocates them.
func RuleKeys(p *policy.Policy, key []byte) [][]byte {
	var keys [][]byte
	for i := range p.Rules {
		keys = append(keys, p.AppendRuleKey(nil, i, key))
	}
	if p.Penalty > 0 {
		keys = append(keys, p.AppendPenaltyKey(nil, key))
	}
	return keys
}

// Binding returns the decision RL.CHECK replies with and its rule's index.
// Denied: the denying rule with the longest wait (never is longest).
// Admitted: the rule with the least remaining, with the longest delay any
// admitting rule asks for (a LEAKY rule's turn). During a penalty, left, the
// key is denied outright and waits at least until the penalty ends.
func Binding(ds []window.Decision, left time.Duration) (window.Decision, int) {
	deny, least, delay := -1, 0, time.Duration(0)
	for i, d := range ds {
		switch {
		case !d.Allowed && (deny < 0 || longer(d.Wait, ds[deny].Wait)):
			deny = i
		case d.Remaining < ds[least].Remaining:
			least = i
		}
		if d.Allowed {
			delay = max(delay, d.Wait)
		}
	}
	if deny < 0 {
		d := ds[least]
		d.Wait = delay
		if left > 0 {
			d.Allowed, d.Wait = false, left
		}
		return d, least
	}
	d := ds[deny]
	if left > 0 && d.Wait != window.Never {
		d.Wait = max(d.Wait, left)
	}
	return d, deny
}

// longer reports whether wait a is longer than b, where Never is longest.
func longer(a, b time.Duration) bool {
	switch {
	case b == window.Never:
		return false
	case a == window.Never:
		return true
	}
	return a > b
}
