package client

import "context"

// Verify sends PING and reports whether rlstore takes this client's
// credentials: an error wrapping ErrAuth if it refuses them (a wrong or
// missing password or user), the outage's error if there is no answer, nil
// otherwise. Call it at startup, so that a wrong password is found there and
// not at the first request; httplimit.New does.
func (c *Client) Verify(ctx context.Context) error {
	return typed(c.rdb.Ping(ctx).Err())
}
