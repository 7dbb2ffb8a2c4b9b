package decide

import (
	"strconv"

	"github.com/rlstore/rlstore/policy"
)

// policyOverhead is about what a policy costs beyond its name and
// definition: the parsed rules, the map entry, the slices' headers.
const policyOverhead = 256

// PolicyBytes is about what p takes in memory, counted in --maxmemory.
func PolicyBytes(p *policy.Policy) int64 {
	if p == nil {
		return 0
	}
	return int64(2*len(p.Name)+len(p.Encode())+64*len(p.Rules)) + policyOverhead
}

// admitLocked checks that p may replace old (nil: a new policy) under
// --max-policies and --maxmemory, and charges its bytes to the store's
// memory. It returns the reply refusing it, or "". Call with the change
// lock held.
func (ps *Policies) admitLocked(p, old *policy.Policy) string {
	ps.mu.RLock()
	n := len(ps.byName)
	ps.mu.RUnlock()
	if old == nil && n >= ps.cfg.Max {
		return "ERR too many policies: max-policies is " + strconv.Itoa(ps.cfg.Max)
	}
	if !ps.cfg.Store.Charge(PolicyBytes(p) - PolicyBytes(old)) {
		return ErrOOM
	}
	return ""
}

// chargeLoaded counts a policy loaded at start in --maxmemory, whatever the
// limits: refusing to start over them would lose nothing but the service.
func (ps *Policies) chargeLoaded(p *policy.Policy) {
	if !ps.cfg.Store.Charge(PolicyBytes(p)) {
		ps.cfg.Logger.Warn("the policies loaded take more than --maxmemory allows; new keys will get -OOM", "policy", p.Name)
	}
}
