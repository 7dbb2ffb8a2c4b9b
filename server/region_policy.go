package server

import (
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// A policy is global, on a global key, when every rule of it could be a
// global key (SLIDE or FIXED): RL.CHECK then decides each rule as a global
// key under the rule's internal key, all or nothing, in the region that
// received the request (docs/regions.md). Its PENALTY, if it has one, is
// kept per region, in the key store as without regions: a penalty only
// denies, so it cannot take the rules past their bound. Any other policy
// stays per region, decided by the key store as without regions.

// globalPolicy reports whether p's rules are decided across regions.
func globalPolicy(p *policy.Policy) bool {
	if p == nil {
		return false
	}
	for _, r := range p.Rules {
		if r.Kind != window.KindSlide && r.Kind != window.KindFixed {
			return false
		}
	}
	return true
}

// check decides RL.CHECK of a global policy: a peek of every rule, then,
// if all admit, a copy in the key store of each rule key the region table
// does not hold yet (so that a full store refuses the request with -OOM
// before anything is charged), then the charge of every rule. denied says
// whether the rules denied it (a SHADOW policy admits it all the same).
// While the key's penalty blocks it here, every rule is only peeked; a
// denial by a rule's limit starts the penalty (one by the escrow, which
// waits only for acknowledgements, does not).
func (rn *regionNode) check(key []byte, r *request) (outcome, bool, error) {
	p := r.policy
	var keyBuf [512]byte
	var keys [policy.MaxRules][]byte
	var lims [policy.MaxRules]region.Limit
	var ds [policy.MaxRules]window.Decision
	kb := keyBuf[:0]
	for i, rule := range p.Rules {
		start := len(kb)
		kb = p.AppendRuleKey(kb, i, key)
		keys[i] = kb[start:len(kb):len(kb)]
		lims[i] = region.Limit{Kind: rule.Kind, Limit: rule.Limit, Window: rule.Period}
	}
	var pk []byte
	var left time.Duration
	if p.Penalty > 0 {
		pk = p.AppendPenaltyKey(kb[len(kb):], key)
		left = rn.s.cfg.Store.PenaltyLeft(key, pk, r.now)
	}
	n := len(p.Rules)
	rn.mu.Lock()
	allowed, overLimit := true, false
	for i := range n {
		rd := rn.st.Decide(keys[i], lims[i], r.now, r.cost, true)
		ds[i] = rd.Decision
		allowed = allowed && ds[i].Allowed
		overLimit = overLimit || rd.Mode == region.DeniedLimit
	}
	if allowed && !r.peek && left <= 0 {
		if err := rn.makeRulesLocked(p, keys[:n], r.now, r.cost); err != nil {
			rn.mu.Unlock()
			return outcome{}, false, err
		}
		for i := range n {
			ds[i] = rn.st.Decide(keys[i], lims[i], r.now, r.cost, false).Decision
		}
	}
	urgent := rn.st.Urgent()
	rn.mu.Unlock()
	if urgent {
		rn.nudge()
	}
	if pk != nil && left <= 0 && overLimit && !r.peek && rn.s.cfg.Store.Penalize(key, pk, p.Penalty, r.now) {
		left = p.Penalty
	}
	d, i := binding(ds[:n], left)
	denied := !d.Allowed
	if denied && p.Shadow {
		d.Allowed, d.Wait = true, 0
	}
	return outcome{d: d, rule: i}, denied, nil
}

// makeRulesLocked copies into the key store each rule key the region table
// does not hold, with the state its charge of cost at now will give it.
// If the store refuses one, those copied are deleted and the refusal
// returned: nothing is charged.
func (rn *regionNode) makeRulesLocked(p *policy.Policy, keys [][]byte, now, cost int64) error {
	var made [policy.MaxRules]bool
	for i, k := range keys {
		if rn.st.Has(k) {
			continue
		}
		var st window.State
		b := make([]uint64, 0, 2)
		_, b = p.Rules[i].Decide(&st, b, now, cost, false)
		e := shard.Entry{Key: k, Params: p.Rules[i], State: st, Counters: b, Route: policy.Route(k)}
		if err := rn.s.cfg.Store.Import(e, now); err != nil {
			for j := range i {
				if made[j] { // a tombstone, routed as the copy was
					_ = rn.s.cfg.Store.Import(shard.Entry{Key: keys[j], Route: policy.Route(keys[j])}, now)
				}
			}
			return err
		}
		made[i] = true
	}
	return nil
}

// nudge asks the sync loop for an early exchange.
func (rn *regionNode) nudge() {
	select {
	case rn.wake <- struct{}{}:
	default:
	}
}

// ruleGlobal reports whether key, a policy's internal rule key, belongs to
// a global policy on a global key: restore takes those back.
func (rn *regionNode) ruleGlobal(key []byte) bool {
	name, _, ok := policy.RuleOf(key)
	if !ok || !rn.global(policy.Route(key)) {
		return false
	}
	p, _ := rn.s.policyWithStats(name)
	return globalPolicy(p)
}

// refusedGlobalPolicy refuses RL.RESERVE key POLICY name when the policy
// is global on key, and reports whether it did: a reservation charges the
// key store's rule state directly, past the other regions.
func (s *Server) refusedGlobalPolicy(c *client, key, name []byte) bool {
	if s.reg == nil || policy.Reserved(key) || !s.reg.global(key) {
		return false
	}
	if p, _ := s.policyWithStats(name); !globalPolicy(p) {
		return false
	}
	c.conn.WriteError("ERR RL.RESERVE cannot be global; use RL.CHECK, or a policy with a rule that is not SLIDE or FIXED, or mark the key LOCAL")
	return true
}
