package window

import "time"

// Token is a token bucket in GCRA form. The bucket holds up to Capacity tokens,
// starts full and refills continuously at Rate tokens per Period. Its state is a
// theoretical arrival time (TAT): the instant the bucket will be full again.
// Refill is computed lazily from timestamps. With Capacity 1 it enforces an
// average of one request per Period/Rate.
//
// State layout: [0] TAT, [1] the latest now seen (unix nanoseconds), so that a
// clock stepping back is clamped. The zero State is a full bucket.
type Token struct {
	Capacity int64
	Rate     int64
	Period   time.Duration
}

// maxTau bounds the burst tolerance so that now + 2·tau never overflows int64.
const maxTau = 100 * 365 * 24 * time.Hour

// Validate reports whether the parameters can be honoured without overflow.
func (p Token) Validate() error {
	if p.Capacity < 1 {
		return ErrLimit
	}
	if p.Period <= 0 || p.Period > MaxWindow {
		return ErrWindow
	}
	if p.Rate < 1 || int64(p.Period)/p.Rate < 1 {
		return ErrRate
	}
	if p.Capacity > int64(maxTau)/p.Interval() {
		return ErrLimit
	}
	return nil
}

// Interval returns the emission interval: the nanoseconds one token takes to refill.
func (p Token) Interval() int64 { return int64(p.Period) / p.Rate }

// tau returns the burst tolerance: the time a full bucket takes to refill from empty.
func (p Token) tau() int64 { return p.Interval() * p.Capacity }

// Decide decides a request of cost tokens at now (unix nanoseconds) and, unless it
// is denied or peek is set, charges s. Denied requests never consume.
func (p Token) Decide(s *State, now, cost int64, peek bool) Decision {
	now = max(now, int64(s[1]))
	t, tau := p.Interval(), p.tau()
	tat := max(int64(s[0]), now)
	d := Decision{Limit: p.Capacity}
	if cost <= p.Capacity {
		if next := tat + cost*t; next-now <= tau {
			d.Allowed, d.Remaining, d.Reset = true, (tau-(next-now))/t, time.Duration(next-now)
			if !peek {
				s[0], s[1] = uint64(next), uint64(now)
			}
			return d
		}
	}
	d.Remaining = max(0, (tau-(tat-now))/t)
	d.Reset = time.Duration(tat - now)
	d.Wait = Never
	if cost <= p.Capacity {
		d.Wait = time.Duration(tat + cost*t - tau - now)
	}
	return d
}

// Tokens returns the whole tokens in the bucket at now, without changing s.
func (p Token) Tokens(s State, now int64) int64 {
	now = max(now, int64(s[1]))
	return max(0, (p.tau()-(max(int64(s[0]), now)-now))/p.Interval())
}

// Expiry returns the unix time in nanoseconds at which the bucket is full again.
func (p Token) Expiry(s State) int64 { return int64(s[0]) }
