package window

import "time"

// Leaky is a leaky bucket used as a queue, for traffic shaping: instead of
// refusing a request that comes too soon, it tells it how long to wait for its
// turn. The queue holds up to Capacity units and drains at Rate units per
// Period, one unit every Interval. A request of cost n that fits is admitted
// and its units take the next n turns, the first of them Wait from now; a
// request that does not fit is denied and changes nothing.
//
// A unit occupies the queue from its admission until its turn is over, so the
// units admitted back to back start at least one Interval apart and the queue
// never holds more than Capacity. (Admission is GCRA's rule; what differs from
// Token is the reply: the delay, where Token answers at once.)
//
// State layout: [0] the unix time in nanoseconds at which the queue will be
// empty, [1] the latest now seen, so that a clock stepping back is clamped.
// The zero State is an empty queue. Leaky itself holds no state and is safe for
// concurrent use.
type Leaky struct {
	Capacity int64
	Rate     int64
	Period   time.Duration
}

// Validate reports whether the parameters can be honoured without overflow:
// those of the token bucket whose admission rule Leaky shares.
func (p Leaky) Validate() error { return p.bucket().Validate() }

// Interval returns the drain interval: the nanoseconds one unit's turn takes.
func (p Leaky) Interval() int64 { return int64(p.Period) / p.Rate }

// Decide decides a request of cost units (at least 1) at now (unix nanoseconds)
// and, unless it is denied or peek is set, queues it in s. An admitted
// request's Wait is the delay before it should proceed. Denied requests never
// consume.
func (p Leaky) Decide(s *State, now, cost int64, peek bool) Decision {
	// Admission is the token bucket's rule over the same state: the queue is
	// the bucket's debt. Only an admitted request's Wait differs: its turn.
	now = max(now, int64(s[1]))
	empty := max(int64(s[0]), now) // when the units already queued are done
	d := p.bucket().Decide(s, now, cost, peek)
	if d.Allowed {
		d.Wait = time.Duration(empty - now)
	}
	return d
}

// bucket returns the token bucket whose admission rule Leaky shares.
func (p Leaky) bucket() Token { return Token(p) }

// Queued returns the units in the queue at now (the one being served counts
// until its turn is over), without changing s.
func (p Leaky) Queued(s State, now int64) int64 {
	now = max(now, int64(s[1]))
	return ceilDiv(max(0, int64(s[0])-now), p.Interval())
}

// Expiry returns the unix time in nanoseconds at which the queue is empty.
func (p Leaky) Expiry(s State) int64 { return int64(s[0]) }
