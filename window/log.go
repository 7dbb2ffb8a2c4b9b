package window

import (
	"fmt"
	"slices"
	"time"
)

// MaxLogLimit is the largest Limit a Log accepts. A Log key keeps one entry per
// millisecond that admitted units, so up to Limit entries (8 bytes each: 32 KB
// at the cap). The store keeps them in blocks of at most 4095 words and Decide
// needs room for one more entry, so the cap leaves headroom under that.
// Larger limits belong to Slide, which is exact to the second in bounded memory.
const MaxLogLimit = 4000

// Log is a sliding log at millisecond precision: it records the timestamp of
// every admitted unit and admits a request if the units in (now−Window, now],
// plus its cost, fit in Limit. It is exact, so any Window-long interval holds at
// most Limit units, at the cost of memory that grows with Limit (see MaxLogLimit).
//
// A key's log is a []uint64 of entries logPacking.pack(ms, count), oldest first: the
// units admitted at one unix millisecond share one entry, so a request of cost n
// adds at most one entry. An admission keeps only the entries inside the
// window, so after one the log holds at most Limit entries, and never more than
// MaxLogLimit. Entries are never 0 and never all ones, so a store may use those
// words as markers. Decide costs a binary search and a sum over the window's
// entries (about 1-2 µs at MaxLogLimit). Log itself holds no state and is safe
// for concurrent use.
type Log struct {
	Limit  int64
	Window time.Duration // whole milliseconds
}

// Validate reports whether the parameters can be honoured.
func (p Log) Validate() error {
	if p.Limit < 1 {
		return ErrLimit
	}
	if p.Limit > MaxLogLimit {
		return fmt.Errorf("%w: a log keeps at most %d timestamps", ErrLimit, MaxLogLimit)
	}
	if p.Window < time.Millisecond || p.Window > MaxWindow || p.Window%time.Millisecond != 0 {
		return ErrWindow
	}
	return nil
}

// Decide decides a request of cost units (at least 1) at now (unix nanoseconds)
// against the log b. cap(b) must exceed len(b), so an admitted request has room
// for a new entry. It returns the log to keep: pruned and charged when admitted,
// b itself when denied or peek. Denied requests never consume.
func (p Log) Decide(b []uint64, now, cost int64, peek bool) (Decision, []uint64) {
	ms := max(now, 0) / int64(time.Millisecond)
	if newest := lastMs(b); newest > ms { // the clock stepped back: clamp
		ms = newest
	}
	now = max(now, ms*int64(time.Millisecond))
	first, sum := p.inWindow(b, ms)
	d := Decision{Limit: p.Limit}
	if cost <= p.Limit-sum {
		d.Allowed, d.Remaining, d.Reset = true, p.Limit-sum-cost, time.Duration(p.goneAt(ms)-now)
		if !peek {
			b = record(b, first, ms, cost)
		}
		return d, b
	}
	d.Remaining = max(0, p.Limit-sum)
	d.Wait = logPacking.waitToFit(b[first:], sum, cost, p.Limit, now, p.goneAt)
	if sum > 0 {
		d.Reset = time.Duration(p.goneAt(lastMs(b)) - now)
	}
	return d, b
}

// Count returns the units logged in the window at now, without changing b.
func (p Log) Count(b []uint64, now int64) int64 {
	_, sum := p.inWindow(b, max(now/int64(time.Millisecond), lastMs(b)))
	return sum
}

// Expiry returns the unix time in nanoseconds at which log b no longer
// restricts anything (its newest entry leaves the window), or 0 if it never did.
func (p Log) Expiry(b []uint64) int64 {
	if len(b) == 0 {
		return 0
	}
	return p.goneAt(lastMs(b))
}

// inWindow returns the index of the first entry in the window ending at
// millisecond ms, and the units from there on. Entries ascend, so their
// milliseconds can be found by comparing whole words.
func (p Log) inWindow(b []uint64, ms int64) (first int, sum int64) {
	first, _ = slices.BinarySearch(b, logPacking.pack(max(0, ms-p.windowMs()+1), 0))
	for _, e := range b[first:] {
		sum += logPacking.count(e)
	}
	return first, sum
}

// record drops the entries before first and logs cost units at millisecond ms.
func record(b []uint64, first int, ms, cost int64) []uint64 {
	b = b[:copy(b, b[first:])]
	if k := len(b) - 1; k >= 0 && logPacking.stamp(b[k]) == ms {
		b[k] += uint64(cost)
		return b
	}
	return append(b, logPacking.pack(ms, cost))
}

// goneAt returns the unix time in nanoseconds at which an entry at
// millisecond ms leaves the window: the first millisecond whose window no
// longer reaches back to it.
func (p Log) goneAt(ms int64) int64 { return (ms + p.windowMs()) * int64(time.Millisecond) }

func (p Log) windowMs() int64 { return int64(p.Window / time.Millisecond) }

func lastMs(b []uint64) int64 { return logPacking.last(b) }
