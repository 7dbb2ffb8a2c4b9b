package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// subject adapts one algorithm and one key's state to the checks that every
// algorithm shares (Fixed, Log and Leaky).
type subject interface {
	decide(now, cost int64, peek bool) Decision
	clone() subject
	// clock returns now as the key sees it: clamped so that it never runs
	// behind the key's state. Wait and Reset count from there.
	clock(now int64) int64
}

type fixedSubject struct {
	p Fixed
	s State
}

func (x *fixedSubject) decide(now, cost int64, peek bool) Decision {
	return x.p.Decide(&x.s, now, cost, peek)
}
func (x *fixedSubject) clone() subject        { c := *x; return &c }
func (x *fixedSubject) clock(now int64) int64 { return max(now, int64(x.s[0])) }

type leakySubject struct {
	p Leaky
	s State
}

func (x *leakySubject) decide(now, cost int64, peek bool) Decision {
	return x.p.Decide(&x.s, now, cost, peek)
}
func (x *leakySubject) clone() subject        { c := *x; return &c }
func (x *leakySubject) clock(now int64) int64 { return max(now, int64(x.s[1])) }

type logSubject struct {
	p Log
	b []uint64
}

// decide gives the log room for one more entry, as a store must.
func (x *logSubject) decide(now, cost int64, peek bool) Decision {
	d, b := x.p.Decide(grow(x.b), now, cost, peek)
	x.b = b
	return d
}
func (x *logSubject) clone() subject        { return &logSubject{x.p, slices.Clone(x.b)} }
func (x *logSubject) clock(now int64) int64 { return max(now, lastMs(x.b)*int64(time.Millisecond)) }

// checkedDecide decides a request on x and checks what every algorithm
// promises: a peek first gives the same reply and changes nothing; a denial
// changes nothing; the fields are in range; a denied request is admitted after
// exactly Wait (not a nanosecond earlier) unless Wait is Never; and the key is
// back to its full limit after exactly Reset. With peek it only peeks.
// The checks run millions of times, so they test first and format on failure.
func checkedDecide(t *testing.T, call fmt.Stringer, x subject, now, cost int64, peek bool) Decision {
	before := x.clone()
	d := x.decide(now, cost, true)
	check(t, sameState(before, x), "%v: peek changed the state", call)
	if !peek {
		real := x.decide(now, cost, false)
		check(t, d == real, "%v: peek replied %+v, the real call %+v", call, d, real)
	}
	check(t, d.Allowed || sameState(before, x), "%v: denied but consumed", call)
	checkRanges(t, call, d, cost)
	now = before.clock(now)
	if !d.Allowed && d.Wait != Never {
		at := now + int64(d.Wait)
		check(t, before.clone().decide(at, cost, true).Allowed, "%v: denied with wait %v, but still denied then", call, d.Wait)
		check(t, !before.clone().decide(at-1, cost, true).Allowed, "%v: denied with wait %v, but admitted 1ns sooner", call, d.Wait)
	}
	after := x
	if peek { // Reset speaks of the state the real call leaves
		after = before.clone()
		after.decide(now, cost, false)
	}
	checkResetPromise(t, call, after, now, d)
	return d
}

// check fails the test with the message if ok is false.
func check(t *testing.T, ok bool, format string, args ...any) {
	if !ok {
		t.Helper()
		require.Failf(t, "check failed", format, args...)
	}
}

func sameState(a, b subject) bool {
	switch a := a.(type) {
	case *logSubject:
		return slices.Equal(a.b, b.(*logSubject).b)
	case *fixedSubject:
		return a.s == b.(*fixedSubject).s
	case *leakySubject:
		return a.s == b.(*leakySubject).s
	}
	panic("unknown subject")
}

func checkRanges(t *testing.T, call fmt.Stringer, d Decision, cost int64) {
	check(t, d.Remaining >= 0 && d.Remaining <= d.Limit, "%v: remaining %d of %d", call, d.Remaining, d.Limit)
	check(t, d.Reset >= 0, "%v: reset %v", call, d.Reset)
	switch {
	case d.Allowed:
		check(t, d.Wait >= 0, "%v: admitted with wait %v", call, d.Wait)
	case cost > d.Limit:
		check(t, d.Wait == Never, "%v: cost over the limit, wait %v", call, d.Wait)
	default:
		check(t, d.Wait > 0, "%v: denied with wait %v", call, d.Wait)
	}
}

// checkResetPromise checks that the whole limit fits after Reset and not before.
func checkResetPromise(t *testing.T, call fmt.Stringer, x subject, now int64, d Decision) {
	at := now + int64(d.Reset)
	check(t, x.clone().decide(at, d.Limit, true).Allowed, "%v: reset %v, but not full then", call, d.Reset)
	if d.Reset > 0 {
		check(t, !x.clone().decide(at-1, d.Limit, true).Allowed, "%v: reset %v, but full 1ns sooner", call, d.Reset)
	}
}

// stepCall names a step-table request: "Fixed(t3=2s, cost 2)".
type stepCall struct {
	name string
	i    int
	st   step
}

func (c stepCall) String() string {
	return fmt.Sprintf("%s(t%d=%v, cost %d)", c.name, c.i, c.st.at, c.st.cost)
}

// walk runs a step table on x, with every shared check on each step.
func walk(t *testing.T, name string, x subject, steps []step) {
	t.Helper()
	for i, st := range steps {
		call := stepCall{name, i, st}
		d := checkedDecide(t, call, x, t0+int64(st.at), st.cost, false)
		checkStep(t, call.String(), st, d)
	}
}

// traceCall names a request of a random trace; it formats only on failure.
type traceCall struct {
	name      string
	op        int
	now, cost int64
	peek      bool
}

func (c traceCall) String() string {
	peek := ""
	if c.peek {
		peek = ", PEEK"
	}
	return fmt.Sprintf("op %d: %s(t0+%v, cost %d%s)", c.op, c.name, time.Duration(c.now-t0), c.cost, peek)
}

// traceGap picks the next clock step for an algorithm that frees one unit
// every unit ns: mostly about that long, sometimes none, onto or just before a
// millisecond boundary, a long jump, or backwards. Gaps are capped so that
// 50k steps stay before 2060.
func traceGap(rng *rand.Rand, now, unit, span int64) int64 {
	ms, unit := int64(time.Millisecond), min(unit, int64(time.Hour))
	switch n := rng.IntN(20); {
	case n < 8:
		return rng.Int64N(unit + 1)
	case n < 12:
		return rng.Int64N(4*unit + 1)
	case n < 14:
		return 0
	case n < 16:
		return ms - now%ms - rng.Int64N(2)
	case n < 17:
		return rng.Int64N(ms)
	case n < 19:
		return rng.Int64N(min(3*span, int64(100*time.Hour)) + 1)
	default:
		return -rng.Int64N(min(2*unit, int64(10*time.Second)) + 1)
	}
}

// traceCost picks a cost: mostly small, sometimes the whole limit or more.
func traceCost(rng *rand.Rand, limit int64) int64 {
	switch n := rng.IntN(20); {
	case n < 16:
		return 1 + rng.Int64N(max(1, limit/4))
	case n < 18:
		return 1 + rng.Int64N(limit)
	case n < 19:
		return limit
	default:
		return limit + 1 + rng.Int64N(3)
	}
}

// traceOps is the length of each random trace; see traceLen.
func traceOps(t testing.TB) int {
	return traceLen(t, 2_000, 5_000, 50_000)
}

// traceMs picks a window of whole milliseconds: from 1 ms to a few days.
func traceMs(rng *rand.Rand) time.Duration {
	switch rng.IntN(4) {
	case 0:
		return time.Duration(1+rng.Int64N(20)) * time.Millisecond
	case 1:
		return time.Duration(1+rng.Int64N(5_000)) * time.Millisecond
	case 2:
		return time.Duration(1+rng.Int64N(600)) * time.Second
	}
	return time.Duration(1+rng.Int64N(3*86_400_000)) * time.Millisecond
}

// TestAlgoKinds: the kinds' values are stored on disk and must not move.
func TestAlgoKinds(t *testing.T) {
	for k, want := range map[Kind]string{3: "fixed", 4: "log", 5: "leaky"} {
		require.Equal(t, want, k.String())
	}
	require.Equal(t, Kind(3), KindFixed)
	require.Equal(t, Kind(4), KindLog)
	require.Equal(t, Kind(5), KindLeaky)
	p := Params{Limit: 3, Rate: 2, Period: time.Second}
	for _, k := range []Kind{KindFixed, KindLog, KindLeaky} {
		p.Kind = k
		require.NoErrorf(t, p.Validate(), "%v", k)
	}
	p.Kind, p.Limit = KindLog, MaxLogLimit+1
	require.ErrorIs(t, p.Validate(), ErrLimit)
}
