package accuracy

import "slices"

// counter answers "how many intervals lie inside, or touch, buckets a … b"
// in O(log n) from the intervals' sorted ends.
type counter struct {
	los  []int64    // every lo, sorted
	his  []int64    // every hi, sorted
	long []interval // intervals too wide to fit in a window
}

func newCounter(ivs []interval, units int64) counter {
	c := counter{los: make([]int64, len(ivs)), his: make([]int64, len(ivs))}
	for i, iv := range ivs {
		c.los[i], c.his[i] = iv.lo, iv.hi
		if iv.hi-iv.lo > units {
			c.long = append(c.long, iv)
		}
	}
	slices.Sort(c.los)
	slices.Sort(c.his)
	return c
}

// inside counts intervals with a ≤ lo and hi ≤ b: those with hi ≤ b, less
// those starting before a, plus back those starting before a that end after
// b (never counted by the first term), which only a long interval can do.
func (c counter) inside(a, b int64) int64 {
	n := upper(c.his, b) - lower(c.los, a)
	for _, iv := range c.long {
		if iv.lo < a && iv.hi > b {
			n++
		}
	}
	return int64(n)
}

// touching counts intervals with lo ≤ b and hi ≥ a: those starting by b,
// less those ending before a (which also start before a ≤ b).
func (c counter) touching(a, b int64) int64 {
	return int64(upper(c.los, b) - lower(c.his, a))
}

// lower returns the number of elements < v.
func lower(s []int64, v int64) int {
	i, _ := slices.BinarySearch(s, v)
	return i
}

// upper returns the number of elements ≤ v.
func upper(s []int64, v int64) int {
	return lower(s, v+1)
}

// over finds windows that provably hold more than Limit admitted units.
// The fullest sliding window can always be slid left until it ends on some
// admit's last bucket, so only those ends need checking.
func (acc *Result) over(r Rule, admits []interval) {
	c := newCounter(admits, r.Units)
	var worst int64
	seen := map[int64]bool{}
	for _, iv := range admits {
		a, b := r.window(iv.hi)
		if seen[a] {
			continue
		}
		seen[a] = true
		if excess := c.inside(a, b)*r.Cost - r.Limit; excess > 0 {
			acc.OverWindows++
			worst = max(worst, excess)
		}
	}
	acc.OverAdmitted += worst
}

// maxSpan bounds how many buckets one denial's interval is examined over;
// a wider interval is too uncertain to prove anything.
const maxSpan = 100_000

// under counts denials that had room whenever they may have been decided.
func (acc *Result) under(r Rule, maybe, denials []interval) {
	c := newCounter(maybe, r.Units)
	for _, d := range denials {
		if d.hi-d.lo <= maxSpan && acc.roomThroughout(r, c, d) {
			acc.UnderAdmitted++
		}
	}
}

func (acc *Result) roomThroughout(r Rule, c counter, d interval) bool {
	for f := d.lo; f <= d.hi; f++ {
		a, b := r.window(f)
		if c.touching(a, b)*r.Cost+r.Cost > r.Limit {
			return false
		}
	}
	return true
}
