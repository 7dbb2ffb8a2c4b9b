package window

import "time"

// A Slide key's counters and a Log key's entries are one structure: a
// []uint64, oldest first, each word a time stamp (a second for Slide, a
// millisecond for Log) above a count of the units admitted then. packing is
// how many low bits hold the count.
type packing uint

const (
	slidePacking packing = 32 // counts up to a Slide limit (2^32-1); seconds above
	logPacking   packing = 20 // counts up to MaxLogLimit; 44 bits of milliseconds, until the year 2527
)

func (k packing) pack(stamp, count int64) uint64 { return uint64(stamp)<<k | uint64(count) }
func (k packing) stamp(c uint64) int64           { return int64(c >> k) }
func (k packing) count(c uint64) int64           { return int64(c & (1<<k - 1)) }

// last returns the stamp of b's newest counter, or 0 if it has none.
func (k packing) last(b []uint64) int64 {
	if len(b) == 0 {
		return 0
	}
	return k.stamp(b[len(b)-1])
}

// waitToFit returns how long from now until enough of the in-window counters
// b, which hold sum units, have left the window for cost more to fit in
// limit, or Never if cost exceeds limit. goneAt returns the unix time in
// nanoseconds at which a counter stamped t leaves the window.
func (k packing) waitToFit(b []uint64, sum, cost, limit, now int64, goneAt func(t int64) int64) time.Duration {
	if cost > limit {
		return Never
	}
	for _, c := range b {
		sum -= k.count(c)
		if sum+cost <= limit {
			return time.Duration(goneAt(k.stamp(c)) - now)
		}
	}
	return 0
}
