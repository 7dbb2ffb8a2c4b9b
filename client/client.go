package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client sends rlstore commands through a go-redis UniversalClient, so a single
// node (*redis.Client), a cluster client and a ring all work. Every typed call
// is one command and one round trip, and allocates nothing beyond what
// go-redis allocates for the same command sent with Do.
//
// A Client is safe for concurrent use; it holds no state of its own. Close the
// go-redis client yourself.
type Client struct {
	rdb   redis.UniversalClient
	boxes [64]atomic.Pointer[boxed] // recently boxed integers, by value mod 64
	msBox [16]atomic.Pointer[boxed] // recently boxed "Nms" windows, by N mod 16
}

// boxed is an integer already converted to an interface. Go allocates when it
// boxes an int64 of 256 or more, and a caller's limits repeat, so reusing the
// box keeps a typed call at the allocations of a bare Do with constants.
type boxed struct {
	v int64
	a any
}

// box returns v as an interface, from the cache when it holds v.
func (c *Client) box(v int64) any {
	if v >= 0 && v < 256 {
		return v // the runtime boxes these without allocating
	}
	slot := &c.boxes[uint64(v)%uint64(len(c.boxes))]
	if b := slot.Load(); b != nil && b.v == v {
		return b.a
	}
	b := &boxed{v: v, a: v}
	slot.Store(b)
	return b.a
}

// boxMs returns the window argument "<ms>ms" as an interface, from the
// cache when it holds ms: a window that is not whole seconds would
// otherwise cost a string and its box on every call.
func (c *Client) boxMs(ms int64) any {
	slot := &c.msBox[uint64(ms)%uint64(len(c.msBox))]
	if b := slot.Load(); b != nil && b.v == ms {
		return b.a
	}
	b := &boxed{v: ms, a: strconv.FormatInt(ms, 10) + "ms"}
	slot.Store(b)
	return b.a
}

// New returns a Client that sends its commands through rdb.
func New(rdb redis.UniversalClient) *Client {
	if rdb == nil {
		panic("client: New with a nil redis client")
	}
	return &Client{rdb: rdb}
}

// Redis returns the go-redis client this Client sends through.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// ErrReply means rlstore answered with a reply that is not a decision.
var ErrReply = errors.New("client: unexpected reply")

// Option changes one call: Cost and Peek.
type Option struct {
	cost    int64
	hasCost bool
	peek    bool
}

// Cost charges n units instead of 1. n must be at least 1: rlstore answers
// Cost(0) with an error wrapping ErrBadArgs.
func Cost(n int64) Option { return Option{cost: n, hasCost: true} }

// Peek returns the decision the call would give but changes nothing.
func Peek() Option { return Option{peek: true} }

// maxArgs is the longest command a typed call sends:
// RL.RESERVE key TOKEN capacity rate period COST n TTL t ID id.
const maxArgs = 12

// args is a command under construction; it lives on the caller's stack until
// go-redis takes the slice.
type args struct {
	a [maxArgs]any
	n int
	c *Client // boxes integers; nil boxes afresh
}

func (b *args) add(v any) { b.a[b.n] = v; b.n++ }

func (b *args) int(v int64) {
	if b.c == nil {
		b.add(v)
		return
	}
	b.add(b.c.box(v))
}

// duration adds d as whole seconds when it is one, else as "Nms"
// (milliseconds, rounded up), boxed once per Client like the integers.
func (b *args) duration(d time.Duration) {
	if d%time.Second == 0 {
		b.int(int64(d / time.Second))
		return
	}
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if b.c == nil {
		b.add(strconv.FormatInt(ms, 10) + "ms")
		return
	}
	b.add(b.c.boxMs(ms))
}

func (b *args) options(opts []Option) {
	for _, o := range opts {
		if o.hasCost {
			b.add("COST")
			b.int(o.cost)
		}
		if o.peek {
			b.add("PEEK")
		}
	}
}

// decide sends the command in b and parses the five- or six-field reply.
func (c *Client) decide(ctx context.Context, b *args, window time.Duration) (Decision, error) {
	v, err := c.rdb.Do(ctx, b.a[:b.n]...).Result()
	if err != nil {
		return Decision{}, typed(err)
	}
	return parseDecision(v, window)
}

// Slide is a sliding window in which any window-long span holds at most
// limit units. RL.SLIDE alone does not promise that: it counts whole
// seconds, so limit units at x.990 and limit more at (x+1).002 are 2 × limit
// within 12 ms of a one-second window. Up to a limit of MaxLogLimit Slide is
// therefore RL.LOG key limit window, exact to the millisecond (window may be
// milliseconds); above it, RL.SLIDE over the window rounded up to whole
// seconds plus one: a unit then counts for at least window after it came in,
// at the price of admitting up to limit per ceil(window)+1 s, not per window.
// The integrations for Node and Python map their sliding windows the same way.
func (c *Client) Slide(ctx context.Context, key string, limit int64, window time.Duration, opts ...Option) (Decision, error) {
	b := args{c: c}
	if limit >= 1 && limit <= MaxLogLimit {
		b.add("RL.LOG")
		b.add(key)
		b.int(limit)
		b.duration(window)
	} else {
		b.add("RL.SLIDE")
		b.add(key)
		b.int(limit)
		b.int(min(int64((window+time.Second-1)/time.Second)+1, maxWindowSeconds))
	}
	b.options(opts)
	return c.decide(ctx, &b, window)
}

// MaxLogLimit is the largest limit RL.LOG keeps (one entry per busy
// millisecond, at most limit a key): Slide is exact up to it.
const MaxLogLimit = 4000

// maxWindowSeconds is the longest window rlstore keeps, 3650 days.
const maxWindowSeconds = 3650 * 24 * 3600

// Fixed calls RL.FIXED key limit window: a fixed window aligned to multiples
// of window since the Unix epoch.
func (c *Client) Fixed(ctx context.Context, key string, limit int64, window time.Duration, opts ...Option) (Decision, error) {
	b := args{c: c}
	b.add("RL.FIXED")
	b.add(key)
	b.int(limit)
	b.duration(window)
	b.options(opts)
	return c.decide(ctx, &b, window)
}

// Log calls RL.LOG key limit window: an exact sliding log at millisecond
// precision (limit is capped by the server).
func (c *Client) Log(ctx context.Context, key string, limit int64, window time.Duration, opts ...Option) (Decision, error) {
	b := args{c: c}
	b.add("RL.LOG")
	b.add(key)
	b.int(limit)
	b.duration(window)
	b.options(opts)
	return c.decide(ctx, &b, window)
}

// Token calls RL.TOKEN key capacity rate period: a token bucket of capacity
// tokens refilled at rate per period.
func (c *Client) Token(ctx context.Context, key string, capacity, rate int64, period time.Duration, opts ...Option) (Decision, error) {
	return c.bucket(ctx, "RL.TOKEN", key, capacity, rate, period, opts)
}

// Leaky calls RL.LEAKY key capacity rate period: a leaky bucket as a queue.
// An admitted Decision's Wait is when the request's turn comes.
func (c *Client) Leaky(ctx context.Context, key string, capacity, rate int64, period time.Duration, opts ...Option) (Decision, error) {
	return c.bucket(ctx, "RL.LEAKY", key, capacity, rate, period, opts)
}

// bucket takes cmd as an interface so a constant name is boxed without allocating.
func (c *Client) bucket(ctx context.Context, cmd any, key string, capacity, rate int64, period time.Duration, opts []Option) (Decision, error) {
	b := args{c: c}
	b.add(cmd)
	b.add(key)
	b.int(capacity)
	b.int(rate)
	b.duration(period)
	b.options(opts)
	return c.decide(ctx, &b, refill(capacity, rate, period))
}

// refill is how long a bucket of capacity takes to refill from empty at rate
// per period: the window over which capacity is the sustainable quota.
func refill(capacity, rate int64, period time.Duration) time.Duration {
	if rate <= 0 || capacity <= 0 {
		return period
	}
	return time.Duration(float64(period) * float64(capacity) / float64(rate))
}

// Check calls RL.CHECK policy key: every rule of the named policy, all or
// nothing. Decision.Rule is the binding rule's index; Decision.Window is 0
// because the reply does not carry the rule's window.
func (c *Client) Check(ctx context.Context, policy, key string, opts ...Option) (Decision, error) {
	b := args{c: c}
	b.add("RL.CHECK")
	b.add(policy)
	b.add(key)
	b.options(opts)
	return c.decide(ctx, &b, 0)
}

// Throttle calls CL.THROTTLE key maxBurst count period quantity (redis-cell's
// GCRA): count per period, with bursts of maxBurst+1. period must be whole
// seconds. The quantity is 1, or Cost(n) (a negative n refunds); Peek()
// sends quantity 0, which changes nothing. The reply's seconds become Wait
// and Reset; Limit is maxBurst+1.
func (c *Client) Throttle(ctx context.Context, key string, maxBurst, count int64, period time.Duration, opts ...Option) (Decision, error) {
	if period%time.Second != 0 {
		return Decision{}, fmt.Errorf("%w: CL.THROTTLE's period must be whole seconds, not %v", ErrBadArgs, period)
	}
	quantity := int64(1)
	for _, o := range opts {
		if o.hasCost {
			if o.cost == 0 {
				return Decision{}, fmt.Errorf("%w: Cost(0); use Peek", ErrBadArgs)
			}
			quantity = o.cost
		}
		if o.peek {
			quantity = 0
		}
	}
	secs := int64(period / time.Second)
	v, err := c.rdb.Do(ctx, "CL.THROTTLE", key, c.box(maxBurst), c.box(count), c.box(secs), c.box(quantity)).Result()
	if err != nil {
		return Decision{}, typed(err)
	}
	return parseThrottle(v, refill(maxBurst+1, count, period))
}

// HonoursDeadlines reports whether the go-redis client stops waiting for a
// reply when the call's context ends. go-redis does so only with
// ContextTimeoutEnabled; without it a stalled server holds a call for the
// client's ReadTimeout (3 s by default) whatever the context says. It is
// true for client types it cannot inspect.
func (c *Client) HonoursDeadlines() bool {
	switch r := c.rdb.(type) {
	case *redis.Client:
		return r.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return r.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return r.Options().ContextTimeoutEnabled
	}
	return true
}
