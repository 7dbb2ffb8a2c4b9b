package client

import (
	"context"
	"errors"
	"fmt"
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

// PolicyDel deletes the policy and reports whether it existed.
func (c *Client) PolicyDel(ctx context.Context, name string) (bool, error) {
	n, err := c.rdb.Do(ctx, "RL.POLICY", "DEL", name).Int64()
	return n == 1, err
}

// PolicyList returns the names of every policy.
func (c *Client) PolicyList(ctx context.Context) ([]string, error) {
	return c.rdb.Do(ctx, "RL.POLICY", "LIST").StringSlice()
}
