package window

import "time"

// Throttle holds the parameters of CL.THROTTLE, redis-cell's GCRA command:
// MaxBurst+1 units at once, refilling at Count units per Period seconds. It is
// Token under another name (see Token) and drives the same State, so one key
// may be used by both commands; only the reply differs.
//
// Decide follows redis-cell v0.5.0 for every valid input: the emission interval
// T is Period·1e9/Count nanoseconds, truncated; limit = MaxBurst+1 and
// τ = T·limit; a request of quantity q is admitted iff
// now − (max(tat, now) + T·q − τ) ≥ 0, and a denial writes nothing. It differs
// on purpose where redis-cell goes wrong: a peek (q = 0) writes nothing; a
// refund (q < 0) never moves the TAT before now, so it never banks more than a
// full bucket nor sets a negative TTL; parameters that could overflow, zero
// or negative rates and negative bursts fail Validate; no quantity overflows
// T·q; remaining is floored at 0; and below 1 µs per unit, where redis-cell
// divides by zero, remaining is computed in nanoseconds. A clock stepping back
// is clamped, as for Token. Throttle is safe for concurrent use.
type Throttle struct {
	MaxBurst int64
	Count    int64
	Period   int64 // seconds, as CL.THROTTLE takes it
}

// ThrottleReply is CL.THROTTLE's reply. Times are whole seconds, rounded up
// only when the remainder has a non-zero millisecond part, as redis-cell does:
// 2.0004 s is 2, 2.001 s is 3.
type ThrottleReply struct {
	Limited    bool
	Limit      int64
	Remaining  int64
	RetryAfter int64 // seconds until the same request is admitted; -1 if admitted or if it never can be
	ResetAfter int64 // seconds until the key is back to its full limit
}

// Validate reports whether the parameters can be honoured without overflow.
// Unlike redis-cell it refuses a negative burst and zero or negative rates.
func (p Throttle) Validate() error {
	if p.Period < 1 || p.Period > int64(MaxWindow/time.Second) {
		return ErrWindow
	}
	if p.Count < 1 || p.Period*int64(time.Second)/p.Count < 1 {
		return ErrRate
	}
	if p.MaxBurst < 0 || p.MaxBurst > int64(maxTau)/p.interval()-1 {
		return ErrLimit
	}
	return nil
}

// Token returns the Token parameters that decide exactly as p does.
// It is only meaningful when p is valid.
func (p Throttle) Token() Token {
	return Token{Capacity: p.MaxBurst + 1, Rate: p.Count, Period: time.Duration(p.Period) * time.Second}
}

// interval returns T, the emission interval in nanoseconds.
func (p Throttle) interval() int64 { return p.Period * int64(time.Second) / p.Count }

// Decide applies a request of quantity units at now (unix nanoseconds) to s
// under valid parameters p:
// q > 0 is charged if admitted, q = 0 peeks, q < 0 refunds. It reports whether
// it changed s; when it did not, a store must not create the key. Denied
// requests never consume. A changed s expires at Token.Expiry(s), never before
// now; at now exactly (a refund to a full bucket) the store may drop the key.
func (p Throttle) Decide(s *State, now, quantity int64) (ThrottleReply, bool) {
	now = max(now, int64(s[1]))
	t, limit := p.interval(), p.MaxBurst+1
	tau, tat := t*limit, max(int64(s[0]), now)
	r := ThrottleReply{
		Limited: true, Limit: limit, RetryAfter: -1,
		Remaining: throttleRemaining(tau-(tat-now), t), ResetAfter: ceilSeconds(tat - now),
	}
	if quantity > limit { // T·q > τ: never admitted, and T·q could overflow
		return r, false
	}
	next := p.advance(tat, now, quantity)
	if diff := now - (next - tau); diff < 0 {
		r.RetryAfter = ceilSeconds(-diff)
		return r, false
	}
	r.Limited, r.Remaining, r.ResetAfter = false, throttleRemaining(tau-(next-now), t), ceilSeconds(next-now)
	if quantity == 0 {
		return r, false
	}
	s[0], s[1] = uint64(next), uint64(now)
	return r, true
}

// advance returns the new TAT after quantity units at now, where tat is
// max(TAT, now). A refund stops at now: it cannot bank credit beyond a full
// bucket nor move the state into the past (which could leave a key with no
// expiry in redis-cell).
func (p Throttle) advance(tat, now, quantity int64) int64 {
	t := p.interval()
	if quantity < -((tat - now) / t) { // the refund would pass now (and quantity·T might overflow)
		return now
	}
	return tat + quantity*t
}

// throttleRemaining returns redis-cell's remaining: trunc(next/T), computed in
// microseconds and floored at 0. For T under a microsecond, where redis-cell
// divides by zero, it computes in nanoseconds.
func throttleRemaining(next, t int64) int64 {
	if next <= 0 {
		return 0
	}
	if t < int64(time.Microsecond) {
		return next / t
	}
	return (next / int64(time.Microsecond)) / (t / int64(time.Microsecond))
}

// ceilSeconds converts ns to whole seconds, rounding up only when the remainder
// has a non-zero millisecond part. Negative values truncate towards zero.
func ceilSeconds(ns int64) int64 {
	s := ns / int64(time.Second)
	if ns%int64(time.Second)/int64(time.Millisecond) > 0 {
		s++
	}
	return s
}
