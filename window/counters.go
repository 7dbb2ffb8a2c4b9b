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

// Unit returns the time unit of the stamps of kind k's counters: a second
// for Slide, a millisecond for Log. It is 0 for a kind that keeps no counters.
func (k Kind) Unit() time.Duration {
	switch k {
	case KindSlide:
		return time.Second
	case KindLog, KindLease, KindReserve:
		return time.Millisecond
	}
	return 0
}

// packingOf returns how kind k, which keeps counters, packs them.
func (k Kind) packingOf() packing {
	if k == KindLog {
		return logPacking
	}
	return slidePacking
}

// Counter returns the counter of kind k for count units stamped at (in
// k.Unit() since the Unix epoch), or false if they do not fit one: what a
// store that keeps counters in its own format builds them back with.
func (k Kind) Counter(at, count int64) (uint64, bool) {
	pk := k.packingOf()
	if at < 0 || at >= 1<<(64-pk) || count < 1 || count >= 1<<pk {
		return 0, false
	}
	return pk.pack(at, count), true
}

// SplitCounter returns the stamp and the count of counter c of kind k.
func (k Kind) SplitCounter(c uint64) (at, count int64) {
	pk := k.packingOf()
	return pk.stamp(c), pk.count(c)
}
