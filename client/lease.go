package client

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Lease is RL.ACQUIRE's answer: a concurrency limit's lease, admitted or
// not. Being limited is a result, not an error.
type Lease struct {
	Allowed  bool
	ID       string        // the lease's id: the one given, or the one the server made
	Limit    int64         // the most units held at once
	InFlight int64         // units held by live leases, this one included if admitted
	Wait     time.Duration // denied: until enough leases end by their TTL for it to fit (Never if it never can)
	Reset    time.Duration // until the last live lease ends by its TTL
}

// Acquire calls RL.ACQUIRE key limit ttl [ID id] [COST n]: a lease of the
// Cost option's units (default 1) for ttl, if they fit beside the key's
// live leases. An empty id lets the server make one (Lease.ID). A retried
// acquire of a live id renews it and takes no second lease.
func (c *Client) Acquire(ctx context.Context, key string, limit int64, ttl time.Duration, id string, opts ...Option) (Lease, error) {
	b := args{c: c}
	b.add("RL.ACQUIRE")
	b.add(key)
	b.int(limit)
	b.duration(ttl)
	if id != "" {
		b.add("ID")
		b.add(id)
	}
	for _, o := range opts {
		if o.hasCost {
			b.add("COST")
			b.int(o.cost)
		}
	}
	v, err := c.rdb.Do(ctx, b.a[:b.n]...).Result()
	if err != nil {
		return Lease{}, typed(err)
	}
	return parseLease(v)
}

func parseLease(v any) (Lease, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 6 {
		return Lease{}, fmt.Errorf("client: RL.ACQUIRE replied %v, want 6 fields", v)
	}
	id, _ := a[1].(string)
	var n [5]int64
	for i, j := range []int{0, 2, 3, 4, 5} {
		if n[i], ok = a[j].(int64); !ok {
			return Lease{}, fmt.Errorf("client: RL.ACQUIRE field %d is %T, want an integer", j+1, a[j])
		}
	}
	return Lease{Allowed: n[0] == 1, ID: id, Limit: n[1], InFlight: n[2], Wait: ms(n[3]), Reset: ms(n[4])}, nil
}

// Renew calls RL.RENEW key id ttl and reports whether the lease was live
// (a lease that ended is not taken back: acquire again).
func (c *Client) Renew(ctx context.Context, key, id string, ttl time.Duration) (bool, error) {
	b := args{c: c}
	b.add("RL.RENEW")
	b.add(key)
	b.add(id)
	b.duration(ttl)
	return c.bool(ctx, &b)
}

// Release calls RL.RELEASE key id and reports whether the lease was live:
// false if it had expired, was released before, or never existed.
func (c *Client) Release(ctx context.Context, key, id string) (bool, error) {
	return c.bool(ctx, &args{a: [maxArgs]any{"RL.RELEASE", key, id}, n: 3})
}

func (c *Client) bool(ctx context.Context, b *args) (bool, error) {
	n, err := c.rdb.Do(ctx, b.a[:b.n]...).Int64()
	if err != nil {
		return false, typed(err)
	}
	return n == 1, nil
}

// Reservation is RL.RESERVE's answer: the key's decision of the estimate,
// and the reservation's id.
type Reservation struct {
	Decision
	ID string
}

// Reserve calls RL.RESERVE key rule… COST estimate TTL ttl [ID id]: it
// charges estimate units of rule (SLIDE, FIXED or TOKEN) to key now, to be
// replaced by the actual cost with Commit, or given back with Cancel. An
// empty id lets the server make one.
func (c *Client) Reserve(ctx context.Context, key string, rule Rule, estimate int64, ttl time.Duration, id string) (Reservation, error) {
	b := args{c: c}
	b.add("RL.RESERVE")
	b.add(key)
	b.rule(rule)
	_, w := rule.Quota()
	return c.reserve(ctx, &b, estimate, ttl, id, w)
}

// reserve ends an RL.RESERVE that b has begun with COST, TTL and ID, sends
// it, and reads its reply; window is the rule's, for the decision's reset.
func (c *Client) reserve(ctx context.Context, b *args, estimate int64, ttl time.Duration, id string, window time.Duration) (Reservation, error) {
	b.add("COST")
	b.int(estimate)
	b.add("TTL")
	b.duration(ttl)
	if id != "" {
		b.add("ID")
		b.add(id)
	}
	v, err := c.rdb.Do(ctx, b.a[:b.n]...).Result()
	if err != nil {
		return Reservation{}, typed(err)
	}
	a, ok := v.([]any)
	if !ok || len(a) != 6 {
		return Reservation{}, fmt.Errorf("client: RL.RESERVE replied %v, want 6 fields", v)
	}
	rid, _ := a[1].(string)
	d, err := parseDecision(append([]any{a[0]}, a[2:]...), window)
	return Reservation{Decision: d, ID: rid}, err
}

// Commit calls RL.COMMIT key id ACTUAL actual and reports whether the
// reservation was outstanding (false: committed, cancelled or expired).
func (c *Client) Commit(ctx context.Context, key, id string, actual int64) (bool, error) {
	b := args{c: c}
	b.add("RL.COMMIT")
	b.add(key)
	b.add(id)
	b.add("ACTUAL")
	b.int(actual)
	return c.bool(ctx, &b)
}

// Cancel calls RL.CANCEL key id and reports whether the reservation was outstanding.
func (c *Client) Cancel(ctx context.Context, key, id string) (bool, error) {
	return c.bool(ctx, &args{a: [maxArgs]any{"RL.CANCEL", key, id}, n: 3})
}

// Refund calls RL.REFUND key COST n: n units back to a SLIDE, FIXED or
// TOKEN key, never beyond its full limit. It reports whether any came back.
func (c *Client) Refund(ctx context.Context, key string, n int64) (bool, error) {
	b := args{c: c}
	b.add("RL.REFUND")
	b.add(key)
	b.add("COST")
	b.int(n)
	return c.bool(ctx, &b)
}

// RefundRule calls RL.REFUND key rule… COST n: n units back to key, which
// must be of rule's algorithm (SLIDE, FIXED or TOKEN) and takes its
// parameters, never beyond rule's full limit. It reports whether any came back.
func (c *Client) RefundRule(ctx context.Context, key string, rule Rule, n int64) (bool, error) {
	b := args{c: c}
	b.add("RL.REFUND")
	b.add(key)
	b.rule(rule)
	b.add("COST")
	b.int(n)
	return c.bool(ctx, &b)
}

// rule adds rule's algorithm and parameters, as RL.RESERVE and RL.REFUND take them.
func (b *args) rule(rule Rule) {
	alg := strings.ToUpper(rule.Algorithm)
	b.add(alg)
	b.int(rule.Limit)
	if alg == "TOKEN" {
		b.int(rule.Rate)
	}
	b.duration(rule.Window)
}

// SetHeaders sets the IETF RateLimit-Policy and RateLimit fields of a
// concurrency limit (draft-ietf-httpapi-ratelimit-headers' quota unit
// "concurrent-requests": `"name";q=limit;qu="concurrent-requests"` and
// `"name";r=remaining`), and Retry-After on a denial that can succeed later.
func (l Lease) SetHeaders(h http.Header, name string) {
	q := quote(name)
	h.Set("RateLimit-Policy", q+";q="+strconv.FormatInt(l.Limit, 10)+`;qu="concurrent-requests"`)
	h.Set("RateLimit", q+";r="+strconv.FormatInt(max(0, l.Limit-l.InFlight), 10))
	if !l.Allowed && l.Wait >= 0 {
		h.Set("Retry-After", strconv.FormatInt(max(seconds(l.Wait), 1), 10))
	}
}
