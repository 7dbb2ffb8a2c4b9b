package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Rule is one rule of a policy. Limit is the limit of SLIDE, FIXED and LOG and
// the capacity of TOKEN and LEAKY; Rate is used by TOKEN and LEAKY only.
type Rule struct {
	Algorithm string // "SLIDE", "TOKEN", "FIXED", "LOG" or "LEAKY"
	Limit     int64
	Rate      int64
	Window    time.Duration // the window, or the period of TOKEN and LEAKY
}

// Quota returns the rule's quota as RateLimit-Policy advertises it: q units
// per w. Windows (SLIDE, FIXED, LOG) give their limit and window; buckets
// (TOKEN, LEAKY) their capacity and the time a full refill takes.
func (r Rule) Quota() (q int64, w time.Duration) {
	switch strings.ToUpper(r.Algorithm) {
	case "TOKEN", "LEAKY":
		return r.Limit, refill(r.Limit, r.Rate, r.Window)
	}
	return r.Limit, r.Window
}

// Policy is a named, server-side set of rules that RL.CHECK evaluates all or nothing.
type Policy struct {
	Rules   []Rule
	Penalty time.Duration // after a denial, deny the key outright this long (0: none)
	Shadow  bool          // evaluate and count, but always admit
}

// ErrNoPolicy: PolicyGet or Check named a policy that is not defined.
var ErrNoPolicy = errors.New("client: no such policy")

// args returns the words of RL.POLICY SET name after the name.
func (p Policy) args() []any {
	var a []any
	for _, r := range p.Rules {
		alg := strings.ToUpper(r.Algorithm)
		a = append(a, alg, r.Limit)
		if alg == "TOKEN" || alg == "LEAKY" {
			a = append(a, r.Rate)
		}
		a = append(a, durationArg(r.Window))
	}
	if p.Penalty > 0 {
		a = append(a, "PENALTY", durationArg(p.Penalty))
	}
	if p.Shadow {
		a = append(a, "SHADOW")
	}
	return a
}

func durationArg(d time.Duration) any {
	var b args
	b.duration(d)
	return b.a[0]
}

// PolicySet defines (or redefines) the policy name. The server answers once
// the policy is durable.
func (c *Client) PolicySet(ctx context.Context, name string, p Policy) error {
	if len(p.Rules) == 0 {
		return fmt.Errorf("client: policy %q has no rules", name)
	}
	return c.rdb.Do(ctx, append([]any{"RL.POLICY", "SET", name}, p.args()...)...).Err()
}

// PolicyGet returns the policy's definition as the server prints it
// ("SLIDE 10 60 PENALTY 30s"), or ErrNoPolicy.
func (c *Client) PolicyGet(ctx context.Context, name string) (string, error) {
	words, err := c.rdb.Do(ctx, "RL.POLICY", "GET", name).StringSlice()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("%w %q", ErrNoPolicy, name)
	}
	if err != nil {
		return "", err
	}
	return strings.Join(words, " "), nil
}

// PolicyRules returns the rules of the policy name, or ErrNoPolicy: what
// HeaderOptions.Rules takes to advertise every rule of a Check decision.
func (c *Client) PolicyRules(ctx context.Context, name string) ([]Rule, error) {
	def, err := c.PolicyGet(ctx, name)
	if err != nil {
		return nil, err
	}
	return ParseRules(def)
}

// ParseRules reads the rules of a policy definition as RL.POLICY GET prints
// it ("SLIDE 10 60 TOKEN 2 1 3 PENALTY 30"); PENALTY and SHADOW are skipped.
func ParseRules(def string) ([]Rule, error) {
	w := strings.Fields(def)
	var rules []Rule
	for i := 0; i < len(w); {
		alg := strings.ToUpper(w[i])
		n := map[string]int{"SLIDE": 3, "FIXED": 3, "LOG": 3, "TOKEN": 4, "LEAKY": 4, "PENALTY": 2, "SHADOW": 1}[alg]
		if n == 0 || i+n > len(w) {
			return nil, fmt.Errorf("%w: policy definition %q at %q", ErrReply, def, w[i])
		}
		if alg != "PENALTY" && alg != "SHADOW" {
			r, err := parseRule(alg, w[i+1:i+n])
			if err != nil {
				return nil, fmt.Errorf("%w: policy definition %q: %v", ErrReply, def, err)
			}
			rules = append(rules, r)
		}
		i += n
	}
	return rules, nil
}

func parseRule(alg string, w []string) (Rule, error) {
	r := Rule{Algorithm: alg}
	var err error
	if r.Limit, err = strconv.ParseInt(w[0], 10, 64); err != nil {
		return r, err
	}
	if len(w) == 3 {
		if r.Rate, err = strconv.ParseInt(w[1], 10, 64); err != nil {
			return r, err
		}
	}
	r.Window, err = parseDuration(w[len(w)-1])
	return r, err
}

// parseDuration reads a duration as rlstore writes it: whole seconds, or a
// number with a unit (ms, s, m, h, d).
func parseDuration(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	unit := time.Second
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, unit = strings.TrimSuffix(s, u.suffix), u.unit
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return time.Duration(n) * unit, nil
}

// PolicyDel deletes the policy and reports whether it existed.
func (c *Client) PolicyDel(ctx context.Context, name string) (bool, error) {
	n, err := c.rdb.Do(ctx, "RL.POLICY", "DEL", name).Int64()
	return n == 1, err
}

// PolicyList returns the names of every policy.
func (c *Client) PolicyList(ctx context.Context) ([]string, error) {
	return c.rdb.Do(ctx, "RL.POLICY", "LIST").StringSlice()
}
