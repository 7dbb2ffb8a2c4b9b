package httplimit

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/client"
)

// Decider is what the middleware needs from rlstore: one decision for key at
// cost. New builds one from Config.Client with Config.Rule or Config.Policy;
// set Config.Decider to test a handler without a server, or to decide some
// other way.
type Decider interface {
	Decide(ctx context.Context, key string, cost int64) (client.Decision, error)
}

// DeciderFunc adapts a function to Decider.
type DeciderFunc func(ctx context.Context, key string, cost int64) (client.Decision, error)

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, key string, cost int64) (client.Decision, error) {
	return f(ctx, key, cost)
}

// ruleDecider charges a Config.Rule.
type ruleDecider struct {
	c *client.Client
	r client.Rule
}

func (d ruleDecider) Decide(ctx context.Context, key string, cost int64) (client.Decision, error) {
	c, r, opt := d.c, d.r, client.Cost(cost)
	switch strings.ToUpper(r.Algorithm) {
	case "SLIDE":
		return c.Slide(ctx, key, r.Limit, r.Window, opt)
	case "FIXED":
		return c.Fixed(ctx, key, r.Limit, r.Window, opt)
	case "LOG":
		return c.Log(ctx, key, r.Limit, r.Window, opt)
	case "TOKEN":
		return c.Token(ctx, key, r.Limit, r.Rate, r.Window, opt)
	default: // LEAKY; New checked the name
		return c.Leaky(ctx, key, r.Limit, r.Rate, r.Window, opt)
	}
}

// policyDecider checks a Config.Policy with RL.CHECK.
type policyDecider struct {
	c      *client.Client
	policy string
}

func (d policyDecider) Decide(ctx context.Context, key string, cost int64) (client.Decision, error) {
	return d.c.Check(ctx, d.policy, key, client.Cost(cost))
}

func knownAlgorithm(a string) bool {
	switch strings.ToUpper(a) {
	case "SLIDE", "FIXED", "LOG", "TOKEN", "LEAKY":
		return true
	}
	return false
}

// policyRules is a Policy's definition as last read, for RateLimit-Policy.
type policyRules struct {
	rules []client.Rule
	at    time.Time
}

// rulesEvery is how often a Policy's definition is read again, so a
// redefined policy's headers follow within it.
const rulesEvery = time.Minute

// rulesCache holds a Policy's rules for the headers.
type rulesCache struct {
	c      *client.Client
	policy string
	p      atomic.Pointer[policyRules]
}

// get returns the policy's rules, read at most once per rulesEvery; a failed
// read keeps the last rules (or none: the headers then give the binding
// rule's quota alone).
func (rc *rulesCache) get(ctx context.Context, now time.Time) []client.Rule {
	p := rc.p.Load()
	if p == nil || now.Sub(p.at) >= rulesEvery {
		rules, err := rc.c.PolicyRules(ctx, rc.policy)
		if err != nil && p != nil {
			rules = p.rules
		}
		p = &policyRules{rules: rules, at: now}
		rc.p.Store(p)
	}
	return p.rules
}
