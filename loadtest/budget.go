package loadtest

import (
	"context"
	"sync/atomic"
	"time"
)

// budget hands out requests to workers until the count or the deadline is
// reached, or the context ends. It is safe for concurrent use.
type budget struct {
	ctx      context.Context
	limit    int64     // 0: no bound on requests
	deadline time.Time // zero: no bound in time
	claimed  atomic.Int64
}

func newBudget(ctx context.Context, requests int64, d time.Duration, start time.Time) *budget {
	b := &budget{ctx: ctx, limit: requests}
	if d > 0 {
		b.deadline = start.Add(d)
	}
	return b
}

// claim grants up to n more requests, 0 once the run is over.
func (b *budget) claim(n int, now time.Time) int {
	if b.ctx.Err() != nil || (!b.deadline.IsZero() && !now.Before(b.deadline)) {
		return 0
	}
	if b.limit == 0 {
		return n
	}
	end := b.claimed.Add(int64(n))
	start := end - int64(n)
	if start >= b.limit {
		return 0
	}
	return int(min(int64(n), b.limit-start))
}
