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

// walkLeaky runs steps on s under p and returns the state they leave.
func walkLeaky(t *testing.T, p Leaky, s State, steps []step) State {
	t.Helper()
	require.NoError(t, p.Validate())
	x := &leakySubject{p, s}
	walk(t, "Leaky", x, steps)
	return x.s
}

// In the tables below an admitted step's wantWait is the delay before its turn.
func TestLeaky(t *testing.T) {
	walkLeaky(t, Leaky{Capacity: 3, Rate: 1, Period: time.Second}, State{}, []step{
		{0, 1, true, 2, 0, time.Second},
		{0, 1, true, 1, time.Second, 2 * time.Second},
		{500 * time.Millisecond, 1, true, 0, 1500 * time.Millisecond, 2500 * time.Millisecond},
		{500 * time.Millisecond, 1, false, 0, 500 * time.Millisecond, 2500 * time.Millisecond},
		{time.Second, 1, true, 0, 2 * time.Second, 3 * time.Second},
		{time.Second, 4, false, 0, Never, 3 * time.Second},
		{time.Second, math.MaxInt64, false, 0, Never, 3 * time.Second},
		{10 * time.Second, 4, false, 3, Never, 0},
		{10 * time.Second, 3, true, 0, 0, 3 * time.Second},
		{10 * time.Second, 2, false, 0, 2 * time.Second, 3 * time.Second},
		{11500 * time.Millisecond, 1, true, 0, 1500 * time.Millisecond, 2500 * time.Millisecond},
	})
}

// TestLeakyShapes: a burst is spread out one Interval apart instead of refused.
func TestLeakyShapes(t *testing.T) {
	const ms = time.Millisecond
	walkLeaky(t, Leaky{Capacity: 5, Rate: 10, Period: time.Second}, State{}, []step{
		{0, 1, true, 4, 0, 100 * ms},
		{0, 1, true, 3, 100 * ms, 200 * ms},
		{0, 1, true, 2, 200 * ms, 300 * ms},
		{0, 1, true, 1, 300 * ms, 400 * ms},
		{0, 1, true, 0, 400 * ms, 500 * ms},
		{0, 1, false, 0, 100 * ms, 500 * ms},
		{100 * ms, 1, true, 0, 400 * ms, 500 * ms},
		{time.Second, 2, true, 3, 0, 200 * ms}, // the queue ran dry: no wait
	})
}

// TestLeakyFractionalInterval: 3 per second drains one unit every
// Interval() = 333333333 ns.
func TestLeakyFractionalInterval(t *testing.T) {
	const third = 333333333 * time.Nanosecond
	walkLeaky(t, Leaky{Capacity: 2, Rate: 3, Period: time.Second}, State{}, []step{
		{0, 1, true, 1, 0, third},
		{0, 1, true, 0, third, 2 * third},
		{100 * time.Millisecond, 1, false, 0, third - 100*time.Millisecond, 2*third - 100*time.Millisecond},
		{third, 1, true, 0, third, 2 * third},
	})
}

// TestLeakyJumpBackwards follows x/time/rate's TestLimiterJumpBackwards: the
// clock is clamped to the latest admission, so stepping back cannot drain the
// queue early.
func TestLeakyJumpBackwards(t *testing.T) {
	walkLeaky(t, Leaky{Capacity: 2, Rate: 1, Period: time.Second}, State{}, []step{
		{10 * time.Second, 1, true, 1, 0, time.Second},
		{5 * time.Second, 1, true, 0, time.Second, 2 * time.Second}, // clamped to 10 s
		{-time.Hour, 1, false, 0, time.Second, 2 * time.Second},
		{11 * time.Second, 1, true, 0, time.Second, 2 * time.Second},
		{10 * time.Second, 1, false, 0, time.Second, 2 * time.Second}, // clamped to 11 s
	})
}

func TestLeakyBeforeEpoch(t *testing.T) {
	p := Leaky{Capacity: 1, Rate: 1, Period: time.Second}
	var s State
	d := p.Decide(&s, -5, 1, false)
	require.True(t, d.Allowed)
	assert.Equal(t, State{uint64(time.Second), 0}, s)
}

func TestLeakyDeniedNeverConsumes(t *testing.T) {
	p := Leaky{Capacity: 2, Rate: 1, Period: 5 * time.Second}
	var s State
	require.True(t, p.Decide(&s, t0, 2, false).Allowed)
	want := s
	for i := range int64(50) {
		at, cost := t0+i*int64(90*time.Millisecond), 1+i%3
		d := p.Decide(&s, at, cost, false)
		require.Falsef(t, d.Allowed, "Leaky(t%d, cost %d) = allowed, want denied", i, cost)
		assert.Equal(t, want, s)
	}
	assert.True(t, p.Decide(&s, t0+int64(5*time.Second), 1, false).Allowed, "denials filled the queue")
}

// TestLeakyReparameterise: the queue's drain time stays; new parameters read
// it at once.
func TestLeakyReparameterise(t *testing.T) {
	s := walkLeaky(t, Leaky{Capacity: 2, Rate: 1, Period: time.Second}, State{}, []step{
		{0, 2, true, 0, 0, 2 * time.Second},
		{0, 1, false, 0, time.Second, 2 * time.Second},
	})
	s = walkLeaky(t, Leaky{Capacity: 4, Rate: 1, Period: time.Second}, s, []step{
		{0, 1, true, 1, 2 * time.Second, 3 * time.Second}, // raising the capacity frees room
	})
	// Draining twice as fast, the 3 s left hold 6 units of 500 ms.
	walkLeaky(t, Leaky{Capacity: 8, Rate: 2, Period: time.Second}, s, []step{
		{0, 2, true, 0, 3 * time.Second, 4 * time.Second},
	})
}

func TestLeakyQueuedAndExpiry(t *testing.T) {
	p := Leaky{Capacity: 5, Rate: 1, Period: time.Second}
	assert.Zero(t, p.Expiry(State{}))
	s := walkLeaky(t, p, State{}, []step{{0, 3, true, 2, 0, 3 * time.Second}})
	assert.Equal(t, t0+int64(3*time.Second), p.Expiry(s))
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{{-time.Hour, 3}, {0, 3}, {500 * time.Millisecond, 3}, {time.Second, 2}, {2999 * time.Millisecond, 1}, {3 * time.Second, 0}} {
		assert.Equalf(t, tc.want, p.Queued(s, t0+int64(tc.at)), "Queued(%v)", tc.at)
	}
}

func TestLeakyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Leaky
		want error
	}{
		{Leaky{Capacity: 1, Rate: 1, Period: time.Nanosecond}, nil},
		{Leaky{Capacity: 1, Rate: 1, Period: MaxWindow}, nil},
		{Leaky{Capacity: int64(maxTau / time.Nanosecond), Rate: 1, Period: time.Nanosecond}, nil},
		{Leaky{Capacity: 0, Rate: 1, Period: time.Second}, ErrLimit},
		{Leaky{Capacity: -1, Rate: 1, Period: time.Second}, ErrLimit},
		{Leaky{Capacity: int64(maxTau/time.Second) + 1, Rate: 1, Period: time.Second}, ErrLimit},
		{Leaky{Capacity: math.MaxInt64, Rate: 1, Period: time.Second}, ErrLimit},
		{Leaky{Capacity: 1, Rate: 1, Period: 0}, ErrWindow},
		{Leaky{Capacity: 1, Rate: 1, Period: MaxWindow + 1}, ErrWindow},
		{Leaky{Capacity: 1, Rate: 0, Period: time.Second}, ErrRate},
		{Leaky{Capacity: 1, Rate: -1, Period: time.Second}, ErrRate},
		{Leaky{Capacity: 1, Rate: int64(time.Second) + 1, Period: time.Second}, ErrRate},
	} {
		assert.ErrorIsf(t, tc.p.Validate(), tc.want, "%+v.Validate()", tc.p)
		kp := Params{Kind: KindLeaky, Limit: tc.p.Capacity, Rate: tc.p.Rate, Period: tc.p.Period}
		assert.Equal(t, tc.p, kp.Leaky())
		assert.Equal(t, tc.p.Validate(), kp.Validate())
	}
}

// leakyModel is the brute-force reference for Leaky: the start of every
// admitted unit's turn. A unit is in the queue from its admission until its
// turn is over; a request fits if the queue can take all its units now; its
// units take the next turns, one Interval each.
type leakyModel struct {
	capacity, iv int64
	starts       []int64
	last         int64 // the latest admission: the clock never runs behind it
}

// queued returns the units still in the queue at now: the tail of starts,
// since starts only grow.
func (m *leakyModel) queued(now int64) []int64 {
	first := len(m.starts)
	for first > 0 && m.starts[first-1]+m.iv > now {
		first--
	}
	return m.starts[first:]
}

// decide returns the reply the spec asks for at now, queueing the units if admitted.
func (m *leakyModel) decide(now, cost int64, peek bool) Decision {
	now = max(now, m.last, 0)
	in := m.queued(now)
	n, turn := int64(len(in)), now // turn: when the next unit's turn can start
	if n > 0 {
		turn = in[n-1] + m.iv
	}
	if n+cost <= m.capacity {
		if !peek {
			for i := range cost {
				m.starts = append(m.starts, turn+i*m.iv)
			}
			m.last = now
		}
		return Decision{Allowed: true, Limit: m.capacity, Remaining: m.capacity - n - cost,
			Wait: time.Duration(turn - now), Reset: time.Duration(turn + cost*m.iv - now)}
	}
	d := Decision{Limit: m.capacity, Remaining: max(0, m.capacity-n), Wait: Never, Reset: time.Duration(turn - now)}
	if cost <= m.capacity {
		d.Wait = time.Duration(in[n+cost-m.capacity-1] + m.iv - now) // when the units in excess are done
	}
	return d
}

// checkQueue checks the invariants over everything admitted so far: turns
// never overlap, and the queue never held more than capacity units. The queue
// only grows at an admission, so checking just after each one is enough.
// Units before from were seeded, and count only as queued.
func (m *leakyModel) checkQueue(t *testing.T, admitted []int64, from int) {
	for i := 1; i < len(m.starts); i++ {
		check(t, m.starts[i]-m.starts[i-1] >= m.iv, "unit %d starts %v after the one before", i, time.Duration(m.starts[i]-m.starts[i-1]))
	}
	lo := 0
	for i, at := range admitted { // admitted[i]: when the unit whose turn is starts[i] joined
		if i < from {
			continue
		}
		check(t, m.starts[i] >= at, "unit %d starts before it was admitted", i)
		for m.starts[lo]+m.iv <= at {
			lo++
		}
		check(t, int64(i-lo+1) <= m.capacity, "%d units queued at t0+%v", i-lo+1, time.Duration(at-t0))
	}
}

// leakyRun drives one key through a random trace or a fuzz program, checking
// every reply against the model and the shared promises.
type leakyRun struct {
	t        *testing.T
	x        *leakySubject
	m        *leakyModel
	admitted []int64 // per unit, when it was admitted
	from     int     // first unit admitted under the current parameters
	op       int
}

func newLeakyRun(t *testing.T, p Leaky) *leakyRun {
	require.NoError(t, p.Validate())
	return &leakyRun{t: t, x: &leakySubject{p: p}, m: &leakyModel{capacity: p.Capacity, iv: p.Interval()}}
}

// maxSeeded bounds the units a reseeded model may need.
const maxSeeded = 4096

// setParams re-parameterises the key and reseeds the model from its state:
// the queue's drain time, read as back-to-back units of the new Interval
// ending when the queue is empty. It refuses (returns false) when that would
// take more than maxSeeded units.
func (r *leakyRun) setParams(p Leaky) bool {
	require.NoError(r.t, p.Validate())
	empty, last, iv := int64(r.x.s[0]), int64(r.x.s[1]), p.Interval()
	n := ceilDiv(max(0, empty-last), iv)
	if n > maxSeeded {
		return false
	}
	r.check()
	r.x.p = p
	r.m = &leakyModel{capacity: p.Capacity, iv: iv, last: last}
	r.admitted = r.admitted[:0]
	for k := n; k >= 1; k-- {
		r.m.starts, r.admitted = append(r.m.starts, empty-k*iv), append(r.admitted, last)
	}
	r.from = len(r.m.starts)
	return true
}

func (r *leakyRun) step(now, cost int64, peek bool) {
	call := traceCall{"Leaky", r.op, now, cost, peek}
	r.op++
	d := checkedDecide(r.t, call, r.x, now, cost, peek)
	want := r.m.decide(now, cost, peek)
	check(r.t, d == want, "%v = %s %+v, want %s %+v", call, verdict(d.Allowed), d, verdict(want.Allowed), want)
	for range len(r.m.starts) - len(r.admitted) {
		r.admitted = append(r.admitted, r.m.last)
	}
}

func (r *leakyRun) check() { r.m.checkQueue(r.t, r.admitted, r.from) }

// TestLeakyModel runs long random traces against the brute-force model: every
// reply must match it exactly, admitted units' turns (now+wait onwards) are at
// least one Interval apart, and the queue never holds more than Capacity.
func TestLeakyModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x1ea4))
			p := Leaky{Capacity: 1 + rng.Int64N(40), Rate: 1 + rng.Int64N(10), Period: traceMs(rng) + time.Duration(rng.Int64N(1000))}
			r := newLeakyRun(t, p)
			now := t0 + rng.Int64N(int64(time.Second))
			for range traceOps(t) {
				now += traceGap(rng, now, p.Interval(), p.Interval()*p.Capacity)
				r.step(now, traceCost(rng, p.Capacity), rng.IntN(10) == 0)
			}
			r.check()
			t.Logf("%+v: %d units admitted in %d requests", p, len(r.m.starts), r.op)
		})
	}
}
