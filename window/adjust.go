package window

import (
	"math"
	"time"
)

// Adjustable reports whether Params.Adjust applies to kind k: the plain
// algorithms whose units a refund can give back (Slide, Fixed, Token).
func (k Kind) Adjustable() bool { return k == KindSlide || k == KindFixed || k == KindToken }

// Refundable reports whether Params.Adjust gives units back (n < 0) on
// kind k: the Adjustable kinds, and Log, whose refund takes back its newest
// entries. A Log takes no charge (n > 0): a charge at a millisecond of its
// own could add an entry beyond the Limit entries a Log is bounded by.
func (k Kind) Refundable() bool { return k.Adjustable() || k == KindLog }

// Adjust changes a key's state (s or b, as for Decide; b with room for one
// more counter) by n units at now, whatever the limit: n < 0 gives -n units
// back (a refund, or a reservation whose actual cost came in under its
// estimate), never beyond the full limit; n > 0 charges n more (an actual
// cost above its estimate), which may take the key past its limit so that
// the next requests wait, as gubernator's DRAIN_OVER_LIMIT does. A charge
// stops at one whole limit past it: the debt is bounded. It returns the
// counters to keep, and reports whether the state changed.
//
// A refund takes back the newest units of the window, which need not be
// the ones it refunds: the window's total is right, the seconds they are
// counted at may be later. On a Log (Kind.Refundable) only a refund
// changes anything.
func (p Params) Adjust(s *State, b []uint64, now, n int64) ([]uint64, bool) {
	now = max(now, 0)
	switch p.Kind {
	case KindToken:
		return b, p.Token().adjust(s, now, n)
	case KindFixed:
		return b, p.Fixed().adjust(s, now, n)
	case KindSlide:
		return p.Slide().adjust(b, now, n)
	case KindLog:
		return p.Log().refund(b, now, -n)
	}
	return b, false
}

// refund takes n units back from the newest entries of the window at now,
// dropping each entry it empties, as if the newest requests had never been
// admitted. It adds no entry, so the log stays within its bound; n <= 0
// changes nothing.
func (p Log) refund(b []uint64, now, n int64) ([]uint64, bool) {
	ms := max(max(now, 0)/int64(time.Millisecond), lastMs(b))
	oldest := ms - p.windowMs() + 1
	changed := false
	for k := len(b) - 1; k >= 0 && n > 0 && logPacking.stamp(b[k]) >= oldest; k-- {
		take := min(n, logPacking.count(b[k]))
		b[k] -= uint64(take) // the count is the entry's low bits
		n -= take
		changed = true
		if logPacking.count(b[k]) == 0 {
			b = append(b[:k], b[k+1:]...)
		}
	}
	return b, changed
}

// adjust moves the bucket's TAT by n tokens, between full (TAT = now) and
// one capacity past empty (TAT = now + 2·tau).
func (p Token) adjust(s *State, now, n int64) bool {
	now = max(now, int64(s[1]))
	tat, t, tau := max(int64(s[0]), now), p.Interval(), p.tau()
	n = max(min(n, 2*p.Capacity), -2*p.Capacity) // |n·t| <= 2·tau: no overflow
	next := min(max(tat+n*t, now), now+2*tau)
	if next == tat {
		return false
	}
	s[0], s[1] = uint64(next), uint64(now)
	return true
}

// adjust moves the window's count by n, between 0 and twice the limit.
func (p Fixed) adjust(s *State, now, n int64) bool {
	now = max(now, int64(s[0]))
	count := p.count(*s, now)
	n = max(min(n, 2*p.Limit), -count) // no overflow, and never below 0
	next := count + n
	if n > 0 {
		next = min(next, max(count, 2*p.Limit))
	}
	if next == count {
		return false
	}
	p.charge(s, now, next)
	return true
}

// adjust adds n units to the current counter, up to twice the limit in the
// window, or takes -n back from the newest counters of the window.
func (p Slide) adjust(b []uint64, now, n int64) ([]uint64, bool) {
	width, _ := p.Width()
	sec := max(now/int64(time.Second), lastSec(b))
	cur := sec / width * width
	_, sum := p.inWindow(b, p.oldest(sec))
	if n > 0 {
		last := int64(0)
		if k := len(b) - 1; k >= 0 && slidePacking.stamp(b[k]) >= cur {
			last = slidePacking.count(b[k])
		}
		n = min(n, 2*p.Limit-sum, math.MaxUint32-last) // a counter holds 32 bits
		if n <= 0 {
			return b, false
		}
		return charge(b, p.oldest(cur), cur, n), true
	}
	changed := false
	for k := len(b) - 1; k >= 0 && n < 0 && slidePacking.stamp(b[k]) >= p.oldest(sec); k-- {
		take := min(-n, slidePacking.count(b[k]))
		b[k] -= uint64(take)
		n += take
		changed = true
		if slidePacking.count(b[k]) == 0 {
			b = append(b[:k], b[k+1:]...)
		}
	}
	return b, changed
}
