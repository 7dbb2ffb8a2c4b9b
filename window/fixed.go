package window

import "time"

// Fixed is a fixed window counter (the INCR+EXPIRE limiter). Windows are aligned
// to multiples of Window since the Unix epoch, so a 60 s window resets at each
// whole minute and a 500 ms window at each whole half second; with FirstHit a
// window starts instead at the first request it admits and lasts Window, as an
// INCR+EXPIRE counter's key does. A request is admitted if the units already
// counted in the current window plus its cost fit in Limit. It is cheap but
// lets up to 2·Limit through across a window edge.
//
// State layout: [0] the unix time in nanoseconds of the latest admission, which
// also names the window its count belongs to and clamps a clock that steps
// back (with FirstHit: of the window's first admission, its start); [1] the
// units admitted in that window. The zero State is an empty window. Fixed
// itself holds no state and is safe for concurrent use.
type Fixed struct {
	Limit    int64
	Window   time.Duration // whole milliseconds
	FirstHit bool          // a window starts at its first admission, not at a multiple of Window
}

// Validate reports whether the parameters can be honoured.
func (p Fixed) Validate() error {
	if p.Limit < 1 {
		return ErrLimit
	}
	if p.Window < time.Millisecond || p.Window > MaxWindow || p.Window%time.Millisecond != 0 {
		return ErrWindow
	}
	return nil
}

// Decide decides a request of cost units (at least 1) at now (unix nanoseconds)
// and, unless it is denied or peek is set, charges s. Denied requests never
// consume.
func (p Fixed) Decide(s *State, now, cost int64, peek bool) Decision {
	now = max(now, int64(s[0]))
	count := p.count(*s, now)
	end := p.endOf(*s, count, now)
	d := Decision{Limit: p.Limit}
	if cost <= p.Limit-count {
		d.Allowed, d.Remaining, d.Reset = true, p.Limit-count-cost, time.Duration(end-now)
		if !peek {
			p.charge(s, now, count+cost)
		}
		return d
	}
	d.Remaining = max(0, p.Limit-count)
	d.Wait = Never
	if cost <= p.Limit {
		d.Wait = time.Duration(end - now) // the next window starts empty
	}
	if count > 0 {
		d.Reset = time.Duration(end - now)
	}
	return d
}

// Count returns the units counted in the window at now, without changing s.
func (p Fixed) Count(s State, now int64) int64 {
	return p.count(s, max(now, int64(s[0])))
}

// Expiry returns the unix time in nanoseconds at which s no longer restricts
// anything (the end of its window), or 0 if it never did. A window refunded
// to 0 units (Adjust) lasts until its end too, as an INCR+EXPIRE counter
// given back with DECRBY keeps its key and TTL: with FirstHit the next
// admission still counts in that window, not in one it starts.
func (p Fixed) Expiry(s State) int64 {
	if s == (State{}) {
		return 0
	}
	if p.FirstHit {
		return int64(s[0]) + int64(p.Window)
	}
	return p.end(int64(s[0]))
}

// count returns the units in the window holding now, which must not precede s[0].
// The units counted in s were admitted between the start of s[0]'s window and
// s[0], so after a change of Window they still count if s[0] falls in now's window.
// With FirstHit the units count until Window after the window's start.
func (p Fixed) count(s State, now int64) int64 {
	if p.FirstHit && now-int64(s[0]) >= int64(p.Window) || !p.FirstHit && int64(s[0]) < p.start(now) {
		return 0
	}
	return int64(s[1])
}

// endOf returns the end of the window holding now, in which s counts count
// units: with FirstHit, Window after its start, or after now if it is empty
// (the next admission starts it).
func (p Fixed) endOf(s State, count, now int64) int64 {
	switch {
	case !p.FirstHit:
		return p.end(now)
	case count == 0 && !p.started(s, now):
		return now + int64(p.Window)
	}
	return int64(s[0]) + int64(p.Window)
}

// started reports whether s holds a FirstHit window that has not ended at
// now, counting units or refunded to none.
func (p Fixed) started(s State, now int64) bool {
	return s != (State{}) && now-int64(s[0]) < int64(p.Window)
}

// charge makes next the count of the window holding now, in which s counts
// count units: under FirstHit the window starts at now unless one has
// started and not ended.
func (p Fixed) charge(s *State, now, next int64) {
	if !p.FirstHit || !p.started(*s, now) {
		s[0] = uint64(now)
	}
	s[1] = uint64(next)
}

// start returns the start of the window holding t (t >= 0).
func (p Fixed) start(t int64) int64 { return t - t%int64(p.Window) }

// end returns the end of the window holding t (t >= 0).
func (p Fixed) end(t int64) int64 { return p.start(t) + int64(p.Window) }
