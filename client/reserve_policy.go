package client

import (
	"context"
	"time"
)

// ReservePolicy calls RL.RESERVE key POLICY name COST estimate TTL ttl
// [ID id]: the estimate is charged to every rule of the policy, all or
// nothing. The decision is the binding rule's; id "" has the server make one.
func (c *Client) ReservePolicy(ctx context.Context, key, policy string, estimate int64, ttl time.Duration, id string) (Reservation, error) {
	b := args{c: c}
	b.add("RL.RESERVE")
	b.add(key)
	b.add("POLICY")
	b.add(policy)
	return c.reserve(ctx, &b, estimate, ttl, id, 0)
}

// CommitPolicy calls RL.COMMIT key id ACTUAL actual POLICY name and reports
// whether the reservation was outstanding.
func (c *Client) CommitPolicy(ctx context.Context, key, policy, id string, actual int64) (bool, error) {
	b := args{c: c}
	b.add("RL.COMMIT")
	b.add(key)
	b.add(id)
	b.add("ACTUAL")
	b.int(actual)
	b.add("POLICY")
	b.add(policy)
	return c.bool(ctx, &b)
}

// CancelPolicy calls RL.CANCEL key id POLICY name and reports whether the
// reservation was outstanding.
func (c *Client) CancelPolicy(ctx context.Context, key, policy, id string) (bool, error) {
	return c.bool(ctx, &args{a: [maxArgs]any{"RL.CANCEL", key, id, "POLICY", policy}, n: 5})
}
