package global

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

// GlobalPolicy reports whether p's rules are decided across regions.
func GlobalPolicy(p *policy.Policy) bool {
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

// Check decides RL.CHECK of a global policy p on key into ds, one
// decision per rule, and returns the time left of the key's penalty (the
// caller picks the binding rule): a peek of every rule, then, if all
// admit, a copy in the key store of each rule key the region table does
// not hold yet (so that a full store refuses the request with -OOM before
// anything is charged), then the charge of every rule. While the key's
// penalty blocks it here, every rule is only peeked; a denial by a rule's
// limit starts the penalty (one by the escrow, which waits only for
// acknowledgements, does not).
func (rn *Node) Check(key []byte, p *policy.Policy, now, cost int64, peek bool, ds []window.Decision) (time.Duration, error) {
	var keyBuf [512]byte
	var keys [policy.MaxRules][]byte
	var lims [policy.MaxRules]region.Limit
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
		left = rn.store.PenaltyLeft(key, pk, now)
	}
	n := len(p.Rules)
	rn.mu.Lock()
	if rn.gatedLocked(key) { // cluster.go: the key's slot is being gained
		rn.mu.Unlock()
		for i := range n {
			ds[i] = rn.recovering(lims[i].Limit)
		}
		return left, nil
	}
	allowed, overLimit := true, false
	for i := range n {
		rd := rn.st.Decide(keys[i], lims[i], now, cost, true)
		ds[i] = rd.Decision
		allowed = allowed && ds[i].Allowed
		overLimit = overLimit || rd.Mode == region.DeniedLimit
	}
	if allowed && !peek && left <= 0 {
		if err := rn.makeRulesLocked(p, keys[:n], now, cost); err != nil {
			rn.mu.Unlock()
			return 0, err
		}
		for i := range n {
			ds[i] = rn.st.Decide(keys[i], lims[i], now, cost, false).Decision
		}
	}
	rn.chargeLocked()
	urgent := rn.st.Urgent()
	rn.mu.Unlock()
	if urgent {
		rn.nudge()
	}
	if pk != nil && left <= 0 && overLimit && !peek && rn.store.Penalize(key, pk, p.Penalty, now) {
		left = p.Penalty
	}
	return left, nil
}

// makeRulesLocked copies into the key store each rule key the region table
// does not hold, with the state its charge of cost at now will give it.
// If the store refuses one, those copied are deleted and the refusal
// returned: nothing is charged.
func (rn *Node) makeRulesLocked(p *policy.Policy, keys [][]byte, now, cost int64) error {
	var made [policy.MaxRules]bool
	for i, k := range keys {
		if rn.st.Has(k) {
			continue
		}
		var st window.State
		b := make([]uint64, 0, 2)
		_, b = p.Rules[i].Decide(&st, b, now, cost, false)
		e := shard.Entry{Key: k, Params: p.Rules[i], State: st, Counters: b, Route: policy.Route(k)}
		if err := rn.store.Import(e, now); err != nil {
			for j := range i {
				if made[j] { // a tombstone, routed as the copy was
					_ = rn.store.Import(shard.Entry{Key: keys[j], Route: policy.Route(keys[j])}, now)
				}
			}
			return err
		}
		made[i] = true
	}
	return nil
}

// RuleGlobal reports whether key, a policy's internal rule key, belongs to
// a global policy on a global key: restore takes those back.
func (rn *Node) RuleGlobal(key []byte) bool {
	name, _, ok := policy.RuleOf(key)
	if !ok || !rn.Global(policy.Route(key)) {
		return false
	}
	return GlobalPolicy(rn.d.Policy(name))
}

// RefusedGlobalPolicy reports whether RL.RESERVE key POLICY p must be
// refused (ErrReserveGlobal): p is global on key, and a reservation charges
// the key store's rule state directly, past the other regions.
func (rn *Node) RefusedGlobalPolicy(key []byte, p *policy.Policy) bool {
	return !policy.Reserved(key) && rn.Global(key) && GlobalPolicy(p)
}

// ErrReserveGlobal is RefusedGlobalPolicy's reply.
const ErrReserveGlobal = "ERR RL.RESERVE cannot be global; use RL.CHECK, or a policy with a rule that is not SLIDE or FIXED, or mark the key LOCAL"
