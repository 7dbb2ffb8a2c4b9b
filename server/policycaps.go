package server

import (
	"strconv"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/decide"
)

// policyOverhead is about what a policy costs beyond its name and
// definition: the parsed rules, the map entry, the slices' headers.
const policyOverhead = 256

// policyBytes is about what p takes in memory, counted in --maxmemory.
func policyBytes(p *policy.Policy) int64 {
	if p == nil {
		return 0
	}
	return int64(2*len(p.Name)+len(p.Encode())+64*len(p.Rules)) + policyOverhead
}

// admitPolicyLocked checks that p may replace old (nil: a new policy) under
// --max-policies and --maxmemory, and charges its bytes to the store's
// memory. It returns the reply refusing it, or "". Call with s.pol.write held.
func (s *Server) admitPolicyLocked(p, old *policy.Policy) string {
	s.pol.mu.RLock()
	n := len(s.pol.byName)
	s.pol.mu.RUnlock()
	if old == nil && n >= s.cfg.MaxPolicies {
		return "ERR too many policies: max-policies is " + strconv.Itoa(s.cfg.MaxPolicies)
	}
	if !s.cfg.Store.Charge(policyBytes(p) - policyBytes(old)) {
		return decide.ErrOOM
	}
	return ""
}

// chargeLoaded counts a policy loaded at start in --maxmemory, whatever the
// limits: refusing to start over them would lose nothing but the service.
func (s *Server) chargeLoaded(p *policy.Policy) {
	if !s.cfg.Store.Charge(policyBytes(p)) {
		s.log.Warn("the policies loaded take more than --maxmemory allows; new keys will get -OOM", "policy", p.Name)
	}
}
