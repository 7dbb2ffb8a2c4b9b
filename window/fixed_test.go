package window

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walkFixed runs steps on s under p and returns the state they leave.
func walkFixed(t *testing.T, p Fixed, s State, steps []step) State {
	t.Helper()
	require.NoError(t, p.Validate())
	x := &fixedSubject{p, s}
	walk(t, "Fixed", x, steps)
	return x.s
}

// t0 is a whole minute, so 10 s windows start at t0, t0+10s, …
func TestFixed(t *testing.T) {
	walkFixed(t, Fixed{Limit: 3, Window: 10 * time.Second}, State{}, []step{
		{0, 1, true, 2, 0, 10 * time.Second},
		{3 * time.Second, 2, true, 0, 0, 7 * time.Second},
		{4 * time.Second, 1, false, 0, 6 * time.Second, 6 * time.Second},
		{9999 * time.Millisecond, 1, false, 0, time.Millisecond, time.Millisecond},
		{10 * time.Second, 3, true, 0, 0, 10 * time.Second},
		{12 * time.Second, 4, false, 0, Never, 8 * time.Second},
		{12 * time.Second, math.MaxInt64, false, 0, Never, 8 * time.Second},
		{25 * time.Second, 4, false, 3, Never, 0}, // a new, empty window: nothing to reset
		{25 * time.Second, 2, true, 1, 0, 5 * time.Second},
		{29 * time.Second, 2, false, 1, time.Second, time.Second},
		{29 * time.Second, 1, true, 0, 0, time.Second},
	})
}

// TestFixedEdgeBurst shows the algorithm's known weakness: 2·Limit pass in
// moments across a window edge.
func TestFixedEdgeBurst(t *testing.T) {
	walkFixed(t, Fixed{Limit: 2, Window: time.Minute}, State{}, []step{
		{59 * time.Second, 2, true, 0, 0, time.Second},
		{time.Minute, 2, true, 0, 0, time.Minute},
		{time.Minute + time.Millisecond, 1, false, 0, time.Minute - time.Millisecond, time.Minute - time.Millisecond},
	})
}

func TestFixedMilliseconds(t *testing.T) {
	walkFixed(t, Fixed{Limit: 2, Window: 500 * time.Millisecond}, State{}, []step{
		{100 * time.Millisecond, 1, true, 1, 0, 400 * time.Millisecond},
		{499 * time.Millisecond, 1, true, 0, 0, time.Millisecond},
		{500*time.Millisecond - time.Nanosecond, 1, false, 0, time.Nanosecond, time.Nanosecond},
		{500 * time.Millisecond, 2, true, 0, 0, 500 * time.Millisecond},
		{1250 * time.Millisecond, 1, true, 1, 0, 250 * time.Millisecond},
	})
	walkFixed(t, Fixed{Limit: 1, Window: time.Millisecond}, State{}, []step{
		{0, 1, true, 0, 0, time.Millisecond},
		{999 * time.Microsecond, 1, false, 0, time.Microsecond, time.Microsecond},
		{time.Millisecond, 1, true, 0, 0, time.Millisecond},
	})
}

// TestFixedJumpBackwards follows x/time/rate's TestLimiterJumpBackwards: the
// clock is clamped to the latest admission, so stepping back cannot reopen an
// earlier, emptier window.
func TestFixedJumpBackwards(t *testing.T) {
	walkFixed(t, Fixed{Limit: 2, Window: 10 * time.Second}, State{}, []step{
		{15 * time.Second, 1, true, 1, 0, 5 * time.Second},
		{5 * time.Second, 1, true, 0, 0, 5 * time.Second}, // clamped to 15 s
		{-time.Hour, 1, false, 0, 5 * time.Second, 5 * time.Second},
		{20 * time.Second, 1, true, 1, 0, 10 * time.Second},
		{19 * time.Second, 1, true, 0, 0, 10 * time.Second}, // clamped to 20 s
		{19 * time.Second, 1, false, 0, 10 * time.Second, 10 * time.Second},
	})
}

func TestFixedBeforeEpoch(t *testing.T) {
	p := Fixed{Limit: 1, Window: 2 * time.Second}
	var s State
	d := p.Decide(&s, -5, 1, false)
	require.True(t, d.Allowed)
	assert.Equal(t, State{0, 1}, s)
	assert.Equal(t, 2*time.Second, d.Reset)
}

func TestFixedDeniedNeverConsumes(t *testing.T) {
	p := Fixed{Limit: 2, Window: 5 * time.Second}
	var s State
	require.True(t, p.Decide(&s, t0, 2, false).Allowed)
	want := s
	for i := range int64(50) {
		at, cost := t0+i*int64(90*time.Millisecond), 1+i%3
		d := p.Decide(&s, at, cost, false)
		require.Falsef(t, d.Allowed, "Fixed(t%d, cost %d) = allowed, want denied", i, cost)
		assert.Equal(t, want, s)
	}
	assert.True(t, p.Decide(&s, t0+int64(5*time.Second), 2, false).Allowed, "denials charged the window")
}

// TestFixedReparameterise: new parameters apply to the existing count at once.
func TestFixedReparameterise(t *testing.T) {
	s := walkFixed(t, Fixed{Limit: 2, Window: time.Minute}, State{}, []step{
		{10 * time.Second, 2, true, 0, 0, 50 * time.Second},
		{11 * time.Second, 1, false, 0, 49 * time.Second, 49 * time.Second},
	})
	s = walkFixed(t, Fixed{Limit: 4, Window: time.Minute}, s, []step{
		{12 * time.Second, 1, true, 1, 0, 48 * time.Second}, // raising the limit frees room
	})
	// An hour window holding 12 s still holds the units counted since t0.
	s = walkFixed(t, Fixed{Limit: 4, Window: time.Hour}, s, []step{
		{30 * time.Second, 2, false, 1, time.Hour - 30*time.Second, time.Hour - 30*time.Second},
		{30 * time.Second, 1, true, 0, 0, time.Hour - 30*time.Second},
	})
	// A 10 s window starting at 30 s no longer holds them.
	walkFixed(t, Fixed{Limit: 4, Window: 10 * time.Second}, s, []step{
		{31 * time.Second, 4, false, 0, 9 * time.Second, 9 * time.Second},
		{40 * time.Second, 4, true, 0, 0, 10 * time.Second},
	})
}

func TestFixedCountAndExpiry(t *testing.T) {
	p := Fixed{Limit: 5, Window: 10 * time.Second}
	assert.Zero(t, p.Expiry(State{}))
	s := walkFixed(t, p, State{}, []step{
		{2 * time.Second, 2, true, 3, 0, 8 * time.Second},
		{3 * time.Second, 1, true, 2, 0, 7 * time.Second},
	})
	assert.Equal(t, t0+int64(10*time.Second), p.Expiry(s))
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{{-time.Hour, 3}, {3 * time.Second, 3}, {9 * time.Second, 3}, {10 * time.Second, 0}} {
		assert.Equalf(t, tc.want, p.Count(s, t0+int64(tc.at)), "Count(%v)", tc.at)
	}
}

func TestFixedValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Fixed
		want error
	}{
		{Fixed{Limit: 1, Window: time.Millisecond}, nil},
		{Fixed{Limit: math.MaxInt64, Window: MaxWindow}, nil},
		{Fixed{Limit: 1, Window: 1500 * time.Millisecond}, nil},
		{Fixed{Limit: 0, Window: time.Second}, ErrLimit},
		{Fixed{Limit: -1, Window: time.Second}, ErrLimit},
		{Fixed{Limit: 1, Window: 0}, ErrWindow},
		{Fixed{Limit: 1, Window: -time.Second}, ErrWindow},
		{Fixed{Limit: 1, Window: time.Millisecond - 1}, ErrWindow},
		{Fixed{Limit: 1, Window: time.Second + time.Microsecond}, ErrWindow},
		{Fixed{Limit: 1, Window: MaxWindow + time.Millisecond}, ErrWindow},
	} {
		assert.ErrorIsf(t, tc.p.Validate(), tc.want, "%+v.Validate()", tc.p)
		kp := Params{Kind: KindFixed, Limit: tc.p.Limit, Period: tc.p.Window}
		assert.Equal(t, tc.p, kp.Fixed())
		assert.Equal(t, tc.p.Validate(), kp.Validate())
	}
}

// fixedModel is the brute-force reference for Fixed: every admitted request
// with its (clamped) time; a request fits if the requests admitted in the same
// window, plus its cost, fit in the limit. Windows are aligned, or with first
// start at an admission Window or more after the previous window's start.
type fixedModel struct {
	limit, win int64
	first      bool
	admits     []fixedAdmit
	last       int64 // the latest admission (first: window start): the clock never runs behind it
}

type fixedAdmit struct{ at, cost int64 }

func (m *fixedModel) clock(now int64) int64 {
	if m.first {
		start, _ := m.window()
		return max(now, start, m.last, 0)
	}
	return max(now, m.last, 0)
}

// window returns the start of the latest first-hit window and the units
// admitted in it, found by walking every admission from the first.
func (m *fixedModel) window() (start, units int64) {
	for i, a := range m.admits {
		if i == 0 || a.at-start >= m.win {
			start, units = a.at, 0
		}
		units += a.cost
	}
	return start, units
}

// count returns the units admitted in the window holding now (clamped).
// Aligned admits are in time order because the clock is clamped.
func (m *fixedModel) count(now int64) int64 {
	if m.first {
		start, units := m.window()
		if len(m.admits) == 0 || now-start >= m.win {
			return 0
		}
		return units
	}
	var n int64
	for i := len(m.admits) - 1; i >= 0 && m.admits[i].at/m.win == now/m.win; i-- {
		n += m.admits[i].cost
	}
	return n
}

// end returns the end of the window holding now, which counts count units.
func (m *fixedModel) end(now, count int64) int64 {
	switch {
	case !m.first:
		return (now/m.win + 1) * m.win
	case count == 0:
		return now + m.win
	}
	start, _ := m.window()
	return start + m.win
}

// decide returns the reply the spec asks for at now, charging the model if admitted.
func (m *fixedModel) decide(now, cost int64, peek bool) Decision {
	now = m.clock(now)
	count := m.count(now)
	end := m.end(now, count)
	d := Decision{Limit: m.limit, Remaining: max(0, m.limit-count), Wait: Never}
	if count+cost <= m.limit {
		d = Decision{Allowed: true, Limit: m.limit, Remaining: m.limit - count - cost, Reset: time.Duration(end - now)}
		if !peek {
			m.admits = append(m.admits, fixedAdmit{now, cost})
			if !m.first {
				m.last = now
			}
		}
		return d
	}
	if cost <= m.limit {
		d.Wait = time.Duration(end - now)
	}
	if count > 0 {
		d.Reset = time.Duration(end - now)
	}
	return d
}

// busiest returns the most units admitted in one window since admit from.
func (m *fixedModel) busiest(from int) int64 {
	per := map[int64]int64{}
	var start int64
	for i, a := range m.admits { // every admission, so first-hit windows start where they did
		id := a.at / m.win
		if m.first {
			if i == 0 || a.at-start >= m.win {
				start = a.at
			}
			id = start
		}
		if i >= from {
			per[id] += a.cost
		}
	}
	var most int64
	for _, n := range per {
		most = max(most, n)
	}
	return most
}

// fixedRun drives one key through a random trace or a fuzz program, checking
// every reply against the model and the shared promises.
type fixedRun struct {
	t    *testing.T
	x    *fixedSubject
	m    *fixedModel
	from int // first admit under the current parameters
	op   int
}

func newFixedRun(t *testing.T, p Fixed) *fixedRun {
	require.NoError(t, p.Validate())
	return &fixedRun{t: t, x: &fixedSubject{p: p}, m: &fixedModel{limit: p.Limit, win: int64(p.Window), first: p.FirstHit}}
}

// setParams re-parameterises the key and reseeds the model from its state.
func (r *fixedRun) setParams(p Fixed) {
	require.NoError(r.t, p.Validate())
	r.check()
	r.x.p = p
	r.m = &fixedModel{limit: p.Limit, win: int64(p.Window), first: p.FirstHit, last: int64(r.x.s[0])}
	if r.x.s[1] > 0 {
		r.m.admits = []fixedAdmit{{int64(r.x.s[0]), int64(r.x.s[1])}}
	}
	r.from = len(r.m.admits)
}

func (r *fixedRun) step(now, cost int64, peek bool) {
	call := traceCall{"Fixed", r.op, now, cost, peek}
	r.op++
	d := checkedDecide(r.t, call, r.x, now, cost, peek)
	want := r.m.decide(now, cost, peek)
	check(r.t, d == want, "%v = %s %+v, want %s %+v", call, verdict(d.Allowed), d, verdict(want.Allowed), want)
}

func (r *fixedRun) check() {
	most := r.m.busiest(r.from)
	require.LessOrEqualf(r.t, most, r.x.p.Limit, "%+v: %d units in one window", r.x.p, most)
}

// TestFixedModel runs long random traces against the brute-force model: every
// reply must match it exactly, and no aligned window may hold more than Limit.
func TestFixedModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0xf1ed))
			p := Fixed{Limit: 1 + rng.Int64N(40), Window: traceMs(rng), FirstHit: seed%2 == 1}
			r := newFixedRun(t, p)
			now := t0 + rng.Int64N(int64(time.Second))
			for range traceOps(t) {
				now += traceGap(rng, now, int64(p.Window)/p.Limit, int64(p.Window))
				r.step(now, traceCost(rng, p.Limit), rng.IntN(10) == 0)
			}
			r.check()
			t.Logf("%+v: %d admitted of %d", p, len(r.m.admits), r.op)
		})
	}
}
