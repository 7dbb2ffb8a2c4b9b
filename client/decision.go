package client

import (
	"fmt"
	"time"
)

// Never is Decision.Wait when the request can never be admitted: its cost is
// larger than the limit.
const Never time.Duration = -1

// Decision is rlstore's answer to one decision command. Being limited is a
// result, not an error: a denied call returns Allowed false and a nil error.
type Decision struct {
	Allowed   bool
	Limit     int64 // the limit or capacity in force
	Remaining int64 // units a request could still take now (after this one, if admitted)
	// Wait: denied, how long until this same request would be admitted (Never
	// if it never can be); admitted, 0, except RL.LEAKY's delay before the
	// request should proceed.
	Wait  time.Duration
	Reset time.Duration // until the key is back to its full limit
	// Window is the span over which Limit is the quota a client can keep up:
	// the window of Slide, Fixed and Log; for Token, Leaky and Throttle the
	// time a full refill takes (period × capacity / rate). 0 for Check.
	Window time.Duration
	Rule   int // Check: index of the binding rule; -1 otherwise
}

// ms turns a reply's milliseconds into a Duration, keeping -1 as Never.
func ms(v int64) time.Duration {
	if v < 0 {
		return Never
	}
	return time.Duration(v) * time.Millisecond
}

// parseDecision reads [allowed, limit, remaining, wait_ms, reset_ms] and RL.CHECK's
// sixth field, the binding rule. It allocates nothing.
func parseDecision(v any, window time.Duration) (Decision, error) {
	f, ok := v.([]any)
	if !ok || (len(f) != 5 && len(f) != 6) {
		return Decision{}, fmt.Errorf("%w: %T of length %d, want 5 or 6 integers", ErrReply, v, len(f))
	}
	var n [6]int64
	for i := range f {
		x, ok := f[i].(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%w: field %d is %T", ErrReply, i, f[i])
		}
		n[i] = x
	}
	d := Decision{Allowed: n[0] == 1, Limit: n[1], Remaining: n[2], Wait: ms(n[3]), Reset: ms(n[4]), Window: window, Rule: -1}
	if len(f) == 6 {
		d.Rule = int(n[5])
	}
	return d, nil
}

// parseThrottle reads redis-cell's [limited, limit, remaining, retry_after_s, reset_after_s].
func parseThrottle(v any, window time.Duration) (Decision, error) {
	f, ok := v.([]any)
	if !ok || len(f) != 5 {
		return Decision{}, fmt.Errorf("%w: %T, want 5 integers", ErrReply, v)
	}
	var n [5]int64
	for i := range f {
		x, ok := f[i].(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%w: field %d is %T", ErrReply, i, f[i])
		}
		n[i] = x
	}
	d := Decision{Allowed: n[0] == 0, Limit: n[1], Remaining: n[2], Reset: time.Duration(n[4]) * time.Second, Window: window, Rule: -1}
	if !d.Allowed {
		d.Wait = time.Duration(n[3]) * time.Second
		if n[3] < 0 {
			d.Wait = Never
		}
	}
	return d, nil
}
