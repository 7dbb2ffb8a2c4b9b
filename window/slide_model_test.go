package window

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const sec = int64(time.Second)

// slideModel is the brute-force reference for Slide. It keeps every admitted
// (second, cost) and, at second s, sums the units whose counter overlaps the
// seconds s-window+1 … s. Counters are the spec's ceil(window/3600) seconds
// wide, so for windows up to an hour this is the spec's per-second rule word
// for word: admit iff the seconds floor(t)-window+1 … floor(t) hold
// sum+cost <= limit.
type slideModel struct {
	limit, win, width int64 // win and width in seconds
	admits            []admit
	clamp             int64 // first second of the newest counter: the clock never runs behind it
}

// admit is one admitted request, or a counter the model was seeded with.
// Admits are kept in admission order, which is also counter order because the
// clock is clamped.
type admit struct {
	sec, cost int64
	seeded    bool
}

func newSlideModel(p Slide) *slideModel {
	win := int64(p.Window / time.Second)
	return &slideModel{limit: p.Limit, win: win, width: (win + 3599) / 3600}
}

// seed starts a model from a Slide's counters, as re-parameterising a key does.
func seedSlideModel(p Slide, b []uint64) *slideModel {
	m := newSlideModel(p)
	for _, c := range b {
		m.admits = append(m.admits, admit{slidePacking.stamp(c), slidePacking.count(c), true})
		m.clamp = slidePacking.stamp(c)
	}
	return m
}

func (m *slideModel) clock(now int64) int64 { return max(now, m.clamp*sec) }

// sum returns the units counted at now, which must be clamped already.
func (m *slideModel) sum(now int64) int64 {
	lo := (now/sec - m.win + 1) / m.width
	var sum int64
	for i := len(m.admits) - 1; i >= 0 && m.admits[i].sec/m.width >= lo; i-- {
		sum += m.admits[i].cost
	}
	return sum
}

func (m *slideModel) fits(now, cost int64) bool {
	return cost <= m.limit && m.sum(now)+cost <= m.limit
}

func (m *slideModel) admit(now, cost int64) {
	s := now / sec
	m.admits = append(m.admits, admit{sec: s, cost: cost})
	m.clamp = max(m.clamp, s/m.width*m.width)
}

// busiest returns the most units in any win consecutive seconds that end at
// an admitted request. Seeded counters alone are left out: they were admitted
// under other parameters, and re-parameterising applies to new requests only.
func busiest(admits []admit, win int64) int64 {
	a := slices.SortedStableFunc(slices.Values(admits), func(x, y admit) int { return cmp.Compare(x.sec, y.sec) })
	var best, sum int64
	j := 0
	for i := range a {
		sum += a[i].cost
		for ; a[j].sec <= a[i].sec-win; j++ {
			sum -= a[j].cost
		}
		if !a[i].seeded {
			best = max(best, sum)
		}
	}
	return best
}

// slideRun drives one key through Slide and its model, checking every reply.
type slideRun struct {
	t  *testing.T
	p  Slide
	b  []uint64
	m  *slideModel
	op int
}

// slideCall names a request in failure messages; it formats only on failure.
type slideCall struct {
	op        int
	now, cost int64
}

func (c slideCall) String() string {
	return fmt.Sprintf("op %d: Slide(t0+%v, cost %d)", c.op, time.Duration(c.now-t0), c.cost)
}

func newSlideRun(t *testing.T, p Slide) *slideRun {
	require.NoError(t, p.Validate())
	return &slideRun{t: t, p: p, m: newSlideModel(p)}
}

// setParams re-parameterises the key and reseeds the model from its counters.
func (r *slideRun) setParams(p Slide) {
	r.checkBusiest()
	require.NoError(r.t, p.Validate())
	r.p, r.m = p, seedSlideModel(p, r.b)
}

func (r *slideRun) checkBusiest() {
	got := busiest(r.m.admits, r.m.win)
	require.LessOrEqualf(r.t, got, r.p.Limit, "%v: %d units in %d consecutive seconds", r.p, got, r.m.win)
}

// step decides one request, peeking first: the peek must change nothing and
// give the reply the real call gives.
func (r *slideRun) step(now, cost int64, peek bool) {
	t, call := r.t, slideCall{r.op, now, cost}
	r.op++
	before := append([]uint64{}, r.b...)
	d, pb := r.p.Decide(grow(r.b), now, cost, true)
	require.Equalf(t, before, pb, "%v: peek changed the counters", call)
	admits, clamp := len(r.m.admits), r.m.clamp
	r.checkModel(call, d, r.m.clock(now))
	if peek {
		r.m.admits, r.m.clamp = r.m.admits[:admits], clamp
		return
	}
	real, b := r.p.Decide(grow(r.b), now, cost, false)
	require.Equalf(t, d, real, "%v: peek and real replies differ", call)
	if !real.Allowed {
		require.Equalf(t, before, b, "%v: denied but consumed", call)
	}
	r.b = b
	r.checkCounters(call, r.m.clock(now), real.Reset)
}

// checkModel checks d against the model at now (clamped) and charges the model if admitted.
func (r *slideRun) checkModel(call slideCall, d Decision, now int64) {
	t, m, cost := r.t, r.m, call.cost
	sum, want := m.sum(now), m.fits(now, call.cost)
	require.Equalf(t, want, d.Allowed, "%v = %s, want %s", call, verdict(d.Allowed), verdict(want))
	require.Equalf(t, m.limit, d.Limit, "%v limit", call)
	if d.Allowed {
		require.Equalf(t, m.limit-sum-cost, d.Remaining, "%v remaining", call)
		require.Zerof(t, d.Wait, "%v wait", call)
		m.admit(now, cost)
	} else {
		require.Equalf(t, max(0, m.limit-sum), d.Remaining, "%v remaining", call)
		r.checkWait(call, d.Wait, now)
	}
	rs := int64(d.Reset)
	require.Truef(t, rs >= 0 && m.sum(now+rs) == 0 && (rs == 0 || m.sum(now+rs-1) > 0),
		"%v reset %v is not when the window empties", call, d.Reset)
}

// checkWait checks that a denied request fits exactly wait later, and also
// after wait rounded up to a millisecond, as the server replies, but not 1 ms sooner.
func (r *slideRun) checkWait(call slideCall, wait time.Duration, now int64) {
	t, m, cost := r.t, r.m, call.cost
	if cost > m.limit {
		require.Equalf(t, Never, wait, "%v wait", call)
		return
	}
	w := int64(wait)
	require.Truef(t, w > 0 && m.fits(now+w, cost) && !m.fits(now+w-1, cost), "%v wait %v is not when it first fits", call, wait)
	ms := int64((wait + time.Millisecond - 1) / time.Millisecond * time.Millisecond)
	require.Truef(t, m.fits(now+ms, cost), "%v does not fit after wait %v rounded up", call, wait)
	require.Falsef(t, m.fits(now+ms-int64(time.Millisecond), cost), "%v fits 1 ms before wait %v rounded up", call, wait)
}

// checkCounters checks the counters a real call left: ordered, within the
// window, and expiring exactly when the reply said the key is back to full.
func (r *slideRun) checkCounters(call slideCall, now int64, reset time.Duration) {
	t := r.t
	require.Truef(t, slices.IsSortedFunc(r.b, func(x, y uint64) int { return cmp.Compare(slidePacking.stamp(x), slidePacking.stamp(y)) }), "%v: counters out of order", call)
	require.LessOrEqualf(t, len(r.b), MaxCounters+2, "%v: %d counters", call, len(r.b))
	if reset > 0 {
		require.Equalf(t, now+int64(reset), r.p.Expiry(r.b), "%v expiry", call)
	} else {
		require.LessOrEqualf(t, r.p.Expiry(r.b), now, "%v expiry", call)
	}
}

// randomSlide picks parameters; seed%4 picks a band of window lengths so that
// every band is covered: short, either side of an hour, days, and months.
func randomSlide(rng *rand.Rand, band uint64) Slide {
	var win int64
	switch band % 4 {
	case 0:
		win = 1 + rng.Int64N(120)
	case 1:
		win = 3590 + rng.Int64N(30)
	case 2:
		win = 1 + rng.Int64N(3*86400)
	default:
		win = 1 + rng.Int64N(400*86400)
	}
	return Slide{Limit: 1 + rng.Int64N(40), Window: time.Duration(win) * time.Second}
}

// randomGap picks the next clock step: mostly about the time one unit of the
// limit takes to free, sometimes none, sub-second, onto a second boundary,
// a long jump, or backwards. Gaps are capped so 100k steps stay before 2060.
func randomGap(rng *rand.Rand, now int64, win time.Duration, limit int64) int64 {
	unit := min(int64(win)/limit, int64(time.Hour))
	switch n := rng.IntN(20); {
	case n < 8:
		return rng.Int64N(unit + 1)
	case n < 12:
		return rng.Int64N(4*unit + 1)
	case n < 14:
		return 0
	case n < 16:
		return rng.Int64N(sec)
	case n < 18:
		return sec - now%sec - rng.Int64N(2) // just before or on the next second
	case n < 19:
		return rng.Int64N(min(3*int64(win), 100*int64(time.Hour)))
	default:
		return -rng.Int64N(min(2*unit, 10*sec) + 1)
	}
}

// randomCost picks a cost: mostly small, sometimes the whole limit or more.
func randomCost(rng *rand.Rand, limit int64) int64 {
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

// modelOps is the length of each random trace; see traceLen.
func modelOps(t testing.TB) int {
	return traceLen(t, 2_000, 10_000, 100_000)
}

// TestSlideModel runs long random traces against the brute-force model:
// every reply must match it exactly, waits and resets must be exact, and no
// window consecutive seconds may ever hold more than the limit.
func TestSlideModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			r := newSlideRun(t, randomSlide(rng, seed))
			t.Logf("%+v", r.p)
			now := t0 + rng.Int64N(sec)
			for range modelOps(t) {
				now += randomGap(rng, now, r.p.Window, r.p.Limit)
				r.step(now, randomCost(rng, r.p.Limit), rng.IntN(10) == 0)
			}
			r.checkBusiest()
			t.Logf("%d admitted of %d", len(r.m.admits), r.op)
		})
	}
}
