package window

import (
	"math"
	"time"
)

// MaxCounters is the most seconds-wide counters one Slide window spans. Longer
// windows use coarser counters, ceil(window/MaxCounters) seconds wide; a window
// then overlaps at most MaxCounters+1 of them.
const MaxCounters = 3600

// MaxWindow is the longest window any algorithm accepts (10 years).
const MaxWindow = 10 * 365 * 24 * time.Hour

// Slide is a sliding window over per-second counters: at time t it sums the
// counters of the seconds floor(t)-window+1 … floor(t) and admits a request if
// sum+cost <= Limit. Any Window consecutive seconds therefore hold at most
// Limit admitted units. Windows over MaxCounters seconds sum every coarser
// counter that overlaps those seconds, which errs towards denying.
//
// A key's counters are a []uint64 of (second<<32 | count), oldest first, holding
// only seconds that saw traffic, so a quiet key pays for a few counters, not a
// whole window. Slide itself holds no state and is safe for concurrent use.
type Slide struct {
	Limit  int64
	Window time.Duration // whole seconds
}

// Validate reports whether the parameters can be honoured.
func (p Slide) Validate() error {
	if p.Limit < 1 || p.Limit > math.MaxUint32 {
		return ErrLimit
	}
	if p.Window < time.Second || p.Window > MaxWindow || p.Window%time.Second != 0 {
		return ErrWindow
	}
	return nil
}

// Width returns the width of one counter in seconds and n = ceil(window/width).
// A window of whole seconds overlaps at most n+1 of them.
func (p Slide) Width() (width, n int64) {
	win := int64(p.Window / time.Second)
	width = ceilDiv(win, MaxCounters)
	return width, ceilDiv(win, width)
}

// Decide decides a request of cost units at now (unix nanoseconds) against the
// counters b. cap(b) must exceed len(b), so an admitted request has room for a new
// counter. It returns the counters to keep: pruned and charged when admitted,
// b itself when denied or peek. Denied requests never consume.
func (p Slide) Decide(b []uint64, now, cost int64, peek bool) (Decision, []uint64) {
	width, _ := p.Width()
	sec := max(now, 0) / int64(time.Second)
	if len(b) > 0 && slidePacking.stamp(b[len(b)-1]) > sec { // the clock stepped back: clamp
		sec = slidePacking.stamp(b[len(b)-1])
	}
	now = max(now, sec*int64(time.Second))
	cur := sec / width * width
	first, sum := p.inWindow(b, p.oldest(sec))
	d := Decision{Limit: p.Limit}
	if cost <= p.Limit && sum+cost <= p.Limit {
		d.Allowed = true
		d.Remaining = p.Limit - sum - cost
		if !peek {
			b = charge(b, p.oldest(cur), cur, cost)
		}
		d.Reset = time.Duration(p.goneAt(max(cur, lastSec(b))) - now)
		return d, b
	}
	d.Remaining = max(0, p.Limit-sum)
	d.Wait = slidePacking.waitToFit(b[first:], sum, cost, p.Limit, now, p.goneAt)
	if sum > 0 {
		d.Reset = time.Duration(p.goneAt(lastSec(b)) - now)
	}
	return d, b
}

// Expiry returns the unix time in nanoseconds at which counters b no longer
// restrict anything, or 0 if they never did.
func (p Slide) Expiry(b []uint64) int64 {
	if len(b) == 0 {
		return 0
	}
	return p.leaves(lastSec(b)) * int64(time.Second)
}

// Count returns the units counted in the window at now, without changing b.
func (p Slide) Count(b []uint64, now int64) int64 {
	_, sum := p.inWindow(b, p.oldest(max(now, 0)/int64(time.Second)))
	return sum
}

// inWindow returns the index of the first counter at or after second lo and the sum from there.
func (p Slide) inWindow(b []uint64, lo int64) (first int, sum int64) {
	first = len(b)
	for i := len(b) - 1; i >= 0 && slidePacking.stamp(b[i]) >= lo; i-- {
		first = i
		sum += slidePacking.count(b[i])
	}
	return first, sum
}

// charge drops counters before second lo and adds cost to the counter for
// second cur. Callers pass lo = oldest(cur), not oldest(now): the clock is only
// clamped to the start of the newest counter, so a later request may carry any
// second of that counter and must still find every counter it would count.
func charge(b []uint64, lo, cur, cost int64) []uint64 {
	i := 0
	for i < len(b) && slidePacking.stamp(b[i]) < lo {
		i++
	}
	b = b[:copy(b, b[i:])]
	if k := len(b) - 1; k >= 0 && slidePacking.stamp(b[k]) >= cur {
		b[k] += uint64(cost) // a counter left by a narrower width: merge, stay conservative
		return b
	}
	return append(b, slidePacking.pack(cur, cost))
}

// oldest returns the first second of the oldest counter that counts at second
// sec: the counter holding second sec-window+1. A coarse counter that only
// partly overlaps the window counts whole, so that no window consecutive
// seconds ever hold more than Limit; counting only the last n counters would
// miss up to width-1 seconds of the window.
func (p Slide) oldest(sec int64) int64 {
	width, _ := p.Width()
	return max(0, sec-int64(p.Window/time.Second)+1) / width * width
}

// leaves returns the second at which a counter at sec leaves the window: the
// first second whose oldest counter starts after sec's.
func (p Slide) leaves(sec int64) int64 {
	width, _ := p.Width()
	return sec/width*width + width + int64(p.Window/time.Second) - 1
}

// goneAt returns the unix time in nanoseconds at which a counter at second sec leaves the window.
func (p Slide) goneAt(sec int64) int64 { return p.leaves(sec) * int64(time.Second) }

func lastSec(b []uint64) int64 { return slidePacking.last(b) }
