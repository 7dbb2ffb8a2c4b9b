package region

import (
	"errors"
	"math"
	"time"

	"github.com/rlstore/rlstore/window"
)

// ErrKind is returned for an algorithm whose state is not a sum of
// per-bucket counts: only SLIDE and FIXED keys can be global.
var ErrKind = errors.New("region: algorithm cannot be global")

// Limit is a global key's limit: Limit units in any Window, counted as a
// sliding window over per-second buckets (window.KindSlide, as window.Slide
// counts) or in fixed windows aligned to the Unix epoch (window.KindFixed,
// one bucket per window).
type Limit struct {
	Kind   window.Kind
	Limit  int64
	Window time.Duration
}

// Validate reports whether l can be a global limit.
func (l Limit) Validate() error {
	switch l.Kind {
	case window.KindSlide:
		return window.Slide{Limit: l.Limit, Window: l.Window}.Validate()
	case window.KindFixed:
		return window.Fixed{Limit: l.Limit, Window: l.Window}.Validate()
	}
	return ErrKind
}

// width returns a bucket's width in nanoseconds.
func (l Limit) width() int64 {
	if l.Kind == window.KindFixed {
		return int64(l.Window)
	}
	w, _ := window.Slide{Limit: l.Limit, Window: l.Window}.Width()
	return w * int64(time.Second)
}

// span returns the bucket holding now and the first bucket the window at
// now counts. A sliding window counts the bucket holding its oldest second
// whole, as window.Slide does.
func (l Limit) span(now int64) (cur, lo int64) {
	w := l.width()
	cur = max(now, 0) / w
	if l.Kind == window.KindFixed {
		return cur, cur
	}
	return cur, l.firstOf(cur)
}

// firstOf returns the first bucket of the window that ends with bucket cur.
func (l Limit) firstOf(cur int64) int64 {
	if l.Kind == window.KindFixed {
		return cur
	}
	w := l.width()
	return max(0, cur*w+w-int64(l.Window)) / w
}

// viewHi returns the newest bucket a decision in bucket cur counts. A
// fixed window counts only its own. A sliding window also counts buckets
// after cur that regions with clocks ahead of this one already charged: a
// window that holds cur holds them too.
func (l Limit) viewHi(cur int64) int64 {
	if l.Kind == window.KindFixed {
		return cur
	}
	return math.MaxInt64
}

// skewBuckets returns how many buckets a clock skew of d spans.
func (l Limit) skewBuckets(d time.Duration) int64 {
	w := l.width()
	return (int64(d) + w - 1) / w
}

// start returns the unix time in nanoseconds at which bucket id begins.
func (l Limit) start(id int64) int64 { return id * l.width() }

// goneAt returns the unix time in nanoseconds at which units in bucket id
// stop counting in any window.
func (l Limit) goneAt(id int64) int64 {
	w := l.width()
	if l.Kind == window.KindFixed {
		return (id + 1) * w
	}
	return id*w + w + int64(l.Window) - int64(time.Second)
}

// sameBuckets reports whether counts kept under l mean the same under m.
func (l Limit) sameBuckets(m Limit) bool { return l.Kind == m.Kind && l.width() == m.width() }
