package window

import (
	"cmp"
	"slices"
	"time"
)

// Join returns a state of one key under p that restricts at least as much
// as either of two states of it, a (s, b as for Decide) and c (t, d), from
// now on: what a cluster node keeps when two nodes each served the key for
// a while and neither knows whose state is newer (a heal after a
// partition). Joining a state with itself, or with an older state of the
// same key, gives the newer state back; joining two states that went
// separate ways counts what both admitted, as far as each kind keeps that
// apart:
//   - Token and Leaky: the later of the two theoretical times (the bucket
//     that is emptier, the queue that is longer), which stays so while both
//     refill or drain at one rate, and the earlier of the two clocks they
//     do not run behind (a later one would refill or drain them sooner);
//   - Fixed: the later window, holding the larger of the two counts at now
//     (with FirstHit, windows two nodes started apart then count more
//     than either: a bound, not the sum);
//   - Slide: each second's counter is the larger of the two;
//   - Log: each millisecond's entry is the larger of the two, then only the
//     newest entries that reach the limit are kept;
//   - Lease: each lease of either state, by id, ending at the later of its
//     two ends and holding the larger of its two costs;
//   - Reserve, a ledger of reservations, is not merged: the one with more
//     outstanding at now (a tie keeps a).
//
// The counters returned are a fresh slice, nil for a kind that keeps none.
func (p Params) Join(s State, b []uint64, t State, d []uint64, now int64) (State, []uint64) {
	switch p.Kind {
	case KindToken, KindLeaky:
		return State{max(s[0], t[0]), min(s[1], t[1])}, nil
	case KindFixed:
		return State{max(s[0], t[0]), uint64(max(p.Count(s, nil, now), p.Count(t, nil, now)))}, nil
	case KindSlide:
		return State{}, p.Slide().join(b, d, now)
	case KindLog:
		return State{}, p.Log().join(b, d, now)
	case KindLease:
		return State{}, joinLeases(b, d, now)
	}
	if p.Count(t, d, now) > p.Count(s, b, now) {
		return t, slices.Clone(d)
	}
	return s, slices.Clone(b)
}

// joinMax merges counters a and b of one packing, both ascending by stamp,
// keeping for each stamp the larger count.
func (k packing) joinMax(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		x, y := k.stamp(a[0]), k.stamp(b[0])
		switch {
		case x < y:
			out, a = append(out, a[0]), a[1:]
		case y < x:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, max(a[0], b[0])), a[1:], b[1:] // one stamp: the larger count
		}
	}
	return append(append(out, a...), b...)
}

// join is Join for Slide: the counters that count at now, or at the newer
// of the two newest counters if the clock runs behind them (see Decide).
func (p Slide) join(a, b []uint64, now int64) []uint64 {
	out := slidePacking.joinMax(a, b)
	sec := max(max(now, 0)/int64(time.Second), lastSec(out))
	first, _ := p.inWindow(out, p.oldest(sec))
	return out[first:]
}

// join is Join for Log: the entries in the window at now (or at the newest
// entry), less the oldest ones that the newer ones fill the limit without:
// they would leave the window before those, so no answer changes, and the
// log holds at most Limit entries, as after an admission.
func (p Log) join(a, b []uint64, now int64) []uint64 {
	out := logPacking.joinMax(a, b)
	ms := max(max(now, 0)/int64(time.Millisecond), lastMs(out))
	first, sum := p.inWindow(out, ms)
	for first < len(out) && sum-logPacking.count(out[first]) >= p.Limit {
		sum -= logPacking.count(out[first])
		first++
	}
	return out[first:]
}

// joinLeases is Join for Lease: the leases live at now of a and b, by id
// ending at the later of the two ends, with the larger cost; at most
// MaxLeases of them, those that end last (the others end first, and until
// then the key holds MaxLeases leases, which admits no acquire anyway).
func joinLeases(a, b []uint64, now int64) []uint64 {
	now = max(now, 0)
	out := make([]uint64, 0, len(a)+len(b))
	for _, l := range [][]uint64{a, b} {
		for i := 2 * leaseFirstLive(l, now); i+1 < len(l); i += 2 {
			if j := leaseFind(out, l[i+1]); j >= 0 {
				w := out[j]
				out[j] = leaseWord(max(int64(w>>leaseCostBits), int64(l[i]>>leaseCostBits)), max(leaseCost(w), leaseCost(l[i])))
				continue
			}
			out = append(out, l[i], l[i+1])
		}
	}
	pairs := make([][2]uint64, 0, len(out)/2)
	for i := 0; i+1 < len(out); i += 2 {
		pairs = append(pairs, [2]uint64{out[i], out[i+1]})
	}
	slices.SortStableFunc(pairs, func(x, y [2]uint64) int { return cmp.Compare(x[0], y[0]) })
	pairs = pairs[max(0, len(pairs)-MaxLeases):]
	out = out[:0]
	for _, l := range pairs {
		out = append(out, l[0], l[1])
	}
	return out
}
