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

const msNs = int64(time.Millisecond)

// ms0 is t0 in unix milliseconds.
var ms0 = t0 / msNs

// walkLog runs steps on log b under p and returns the log they leave.
func walkLog(t *testing.T, p Log, b []uint64, steps []step) []uint64 {
	t.Helper()
	require.NoError(t, p.Validate())
	x := &logSubject{p, b}
	walk(t, "Log", x, steps)
	return x.b
}

func TestLog(t *testing.T) {
	b := walkLog(t, Log{Limit: 3, Window: 10 * time.Second}, nil, []step{
		{0, 1, true, 2, 0, 10 * time.Second},
		{500 * time.Millisecond, 2, true, 0, 0, 10 * time.Second},
		// The unit at 0 must leave for one more to fit; the key is full until those at 500 ms leave.
		{time.Second, 1, false, 0, 9 * time.Second, 9500 * time.Millisecond},
		{10*time.Second - time.Nanosecond, 1, false, 0, time.Nanosecond, 500*time.Millisecond + time.Nanosecond},
		{10 * time.Second, 1, true, 0, 0, 10 * time.Second},
		{10 * time.Second, 1, false, 0, 500 * time.Millisecond, 10 * time.Second},
		{10500 * time.Millisecond, 2, true, 0, 0, 10 * time.Second},
		{10500 * time.Millisecond, 4, false, 0, Never, 10 * time.Second},
		{12 * time.Second, 3, false, 0, 8500 * time.Millisecond, 8500 * time.Millisecond},
		{time.Minute, 4, false, 3, Never, 0},
		{time.Minute, 3, true, 0, 0, 10 * time.Second},
	})
	// Admitting at one minute pruned every entry before it.
	assert.Equal(t, []uint64{logPacking.pack(ms0+60_000, 3)}, b)
}

// TestLogEntries: the units admitted in one millisecond share one entry, so a
// request of cost n costs one word, and the log never outgrows the limit.
func TestLogEntries(t *testing.T) {
	b := walkLog(t, Log{Limit: 5, Window: time.Second}, nil, []step{
		{0, 1, true, 4, 0, time.Second},
		{999 * time.Microsecond, 2, true, 2, 0, time.Second - 999*time.Microsecond},
		{time.Millisecond, 2, true, 0, 0, time.Second},
	})
	assert.Equal(t, []uint64{logPacking.pack(ms0, 3), logPacking.pack(ms0+1, 2)}, b)
	e := logPacking.pack(math.MaxInt64/msNs, MaxLogLimit)
	assert.Equal(t, math.MaxInt64/msNs, logPacking.stamp(e))
	assert.Equal(t, int64(MaxLogLimit), logPacking.count(e))
	assert.NotEqual(t, ^uint64(0), e)
}

func TestLogMilliseconds(t *testing.T) {
	walkLog(t, Log{Limit: 1, Window: time.Millisecond}, nil, []step{
		{0, 1, true, 0, 0, time.Millisecond},
		{999999 * time.Nanosecond, 1, false, 0, time.Nanosecond, time.Nanosecond},
		{time.Millisecond, 1, true, 0, 0, time.Millisecond},
	})
	walkLog(t, Log{Limit: 2, Window: 1500 * time.Millisecond}, nil, []step{
		{250 * time.Microsecond, 1, true, 1, 0, 1500*time.Millisecond - 250*time.Microsecond},
		{time.Second, 1, true, 0, 0, 1500 * time.Millisecond},
		{1499 * time.Millisecond, 1, false, 0, time.Millisecond, time.Second + time.Millisecond},
		{1500 * time.Millisecond, 1, true, 0, 0, 1500 * time.Millisecond},
	})
}

// TestLogJumpBackwards follows x/time/rate's TestLimiterJumpBackwards: the
// clock is clamped to the newest entry, so stepping back cannot let old
// entries out early.
func TestLogJumpBackwards(t *testing.T) {
	b := walkLog(t, Log{Limit: 2, Window: 3 * time.Second}, nil, []step{
		{10 * time.Second, 1, true, 1, 0, 3 * time.Second},
		{8 * time.Second, 1, true, 0, 0, 3 * time.Second}, // clamped to 10 s
		{7 * time.Second, 1, false, 0, 3 * time.Second, 3 * time.Second},
		{-time.Hour, 1, false, 0, 3 * time.Second, 3 * time.Second},
		{12900 * time.Millisecond, 1, false, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{13 * time.Second, 1, true, 1, 0, 3 * time.Second},
		{12 * time.Second, 1, true, 0, 0, 3 * time.Second}, // clamped to 13 s
	})
	assert.Equal(t, []uint64{logPacking.pack(ms0+13_000, 2)}, b)
}

func TestLogBeforeEpoch(t *testing.T) {
	p := Log{Limit: 1, Window: 2 * time.Second}
	d, b := p.Decide(make([]uint64, 0, 1), -5, 1, false)
	require.True(t, d.Allowed)
	assert.Equal(t, []uint64{logPacking.pack(0, 1)}, b)
	assert.Equal(t, 2*time.Second, d.Reset)
}

func TestLogDeniedNeverConsumes(t *testing.T) {
	p := Log{Limit: 2, Window: 5 * time.Second}
	_, b := p.Decide(make([]uint64, 0, 4), t0, 2, false)
	want := append([]uint64{}, b...)
	for i := range int64(50) {
		at, cost := t0+i*int64(90*time.Millisecond), 1+i%3
		d, got := p.Decide(grow(b), at, cost, false)
		require.Falsef(t, d.Allowed, "Log(t%d, cost %d) = allowed, want denied", i, cost)
		assert.Equal(t, want, got)
	}
	d, _ := p.Decide(grow(b), t0+int64(5*time.Second), 2, false)
	assert.True(t, d.Allowed, "denials charged the log")
}

// TestLogReparameterise: new parameters apply to the existing entries at once.
func TestLogReparameterise(t *testing.T) {
	b := walkLog(t, Log{Limit: 2, Window: 10 * time.Second}, nil, []step{
		{0, 1, true, 1, 0, 10 * time.Second},
		{4 * time.Second, 1, true, 0, 0, 10 * time.Second},
		{5 * time.Second, 1, false, 0, 5 * time.Second, 9 * time.Second},
	})
	b = walkLog(t, Log{Limit: 3, Window: 10 * time.Second}, b, []step{
		{5 * time.Second, 1, true, 0, 0, 10 * time.Second}, // raising the limit frees room
	})
	b = walkLog(t, Log{Limit: 3, Window: 3 * time.Second}, b, []step{
		{6 * time.Second, 1, true, 0, 0, 3 * time.Second}, // the unit at 0 left the shorter window
	})
	assert.Len(t, b, 3, "the unit at 0 was pruned")
	walkLog(t, Log{Limit: 3, Window: 20 * time.Second}, b, []step{
		{7 * time.Second, 1, false, 0, 17 * time.Second, 19 * time.Second},
	})
	// Lowering the limit below the units logged denies until enough leave.
	d, _ := Log{Limit: 1, Window: 20 * time.Second}.Decide(grow(b), t0+int64(7*time.Second), 1, true)
	assert.Equal(t, Decision{Limit: 1, Wait: 19 * time.Second, Reset: 19 * time.Second}, d)
}

func TestLogCountAndExpiry(t *testing.T) {
	p := Log{Limit: 5, Window: 10 * time.Second}
	assert.Zero(t, p.Expiry(nil))
	b := walkLog(t, p, nil, []step{
		{0, 2, true, 3, 0, 10 * time.Second},
		{3 * time.Second, 1, true, 2, 0, 10 * time.Second},
	})
	assert.Equal(t, t0+int64(13*time.Second), p.Expiry(b))
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{{-time.Hour, 3}, {3 * time.Second, 3}, {9 * time.Second, 3}, {10 * time.Second, 1}, {13 * time.Second, 0}} {
		assert.Equalf(t, tc.want, p.Count(b, t0+int64(tc.at)), "Count(%v)", tc.at)
	}
}

func TestLogValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Log
		want error
	}{
		{Log{Limit: 1, Window: time.Millisecond}, nil},
		{Log{Limit: MaxLogLimit, Window: MaxWindow}, nil},
		{Log{Limit: 1, Window: 1500 * time.Millisecond}, nil},
		{Log{Limit: 0, Window: time.Second}, ErrLimit},
		{Log{Limit: -1, Window: time.Second}, ErrLimit},
		{Log{Limit: MaxLogLimit + 1, Window: time.Second}, ErrLimit},
		{Log{Limit: math.MaxInt64, Window: time.Second}, ErrLimit},
		{Log{Limit: 1, Window: 0}, ErrWindow},
		{Log{Limit: 1, Window: -time.Millisecond}, ErrWindow},
		{Log{Limit: 1, Window: time.Millisecond + 1}, ErrWindow},
		{Log{Limit: 1, Window: MaxWindow + time.Millisecond}, ErrWindow},
	} {
		assert.ErrorIsf(t, tc.p.Validate(), tc.want, "%+v.Validate()", tc.p)
		kp := Params{Kind: KindLog, Limit: tc.p.Limit, Period: tc.p.Window}
		assert.Equal(t, tc.p, kp.Log())
		assert.Equal(t, tc.p.Validate(), kp.Validate())
	}
	assert.EqualError(t, Log{Limit: 5000, Window: time.Second}.Validate(),
		"window: limit out of range: a log keeps at most 4000 timestamps")
}

// logModel is the brute-force reference for Log: the timestamp of every
// admitted unit, at ms precision. A request fits if the units in
// (now−window, now], plus its cost, fit in the limit.
type logModel struct {
	limit, win int64 // win in ms
	units      []int64
}

func (m *logModel) clock(now int64) int64 {
	if n := len(m.units); n > 0 {
		now = max(now, m.units[n-1]*msNs)
	}
	return max(now, 0)
}

// inWindow returns the units in the window at now (clamped), oldest first.
// Units are in time order because the clock is clamped.
func (m *logModel) inWindow(now int64) []int64 {
	first := len(m.units)
	for first > 0 && m.units[first-1] > now/msNs-m.win {
		first--
	}
	return m.units[first:]
}

// decide returns the reply the spec asks for at now, charging the model if admitted.
func (m *logModel) decide(now, cost int64, peek bool) Decision {
	now = m.clock(now)
	in := m.inWindow(now)
	sum, gone := int64(len(in)), func(ms int64) time.Duration { return time.Duration((ms+m.win)*msNs - now) }
	if sum+cost <= m.limit {
		if !peek {
			for range cost {
				m.units = append(m.units, now/msNs)
			}
		}
		return Decision{Allowed: true, Limit: m.limit, Remaining: m.limit - sum - cost, Reset: gone(now / msNs)}
	}
	d := Decision{Limit: m.limit, Remaining: max(0, m.limit-sum), Wait: Never}
	if cost <= m.limit {
		d.Wait = gone(in[sum+cost-m.limit-1]) // when the oldest units in excess have left
	}
	if sum > 0 {
		d.Reset = gone(in[sum-1])
	}
	return d
}

// busiest returns the most units in any window-long interval at ms resolution,
// counting the units since unit from: units i and i+k are in one such interval
// iff they are less than win apart.
func (m *logModel) busiest(from int) int64 {
	most, lo := 0, from
	for hi := from; hi < len(m.units); hi++ {
		for m.units[hi]-m.units[lo] >= m.win {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return int64(most)
}

// logRun drives one key through a random trace or a fuzz program, checking
// every reply against the model and the shared promises.
type logRun struct {
	t    *testing.T
	x    *logSubject
	m    *logModel
	from int // first unit admitted under the current parameters
	op   int
	// longest is the most entries the log held.
	longest int
}

func newLogRun(t *testing.T, p Log) *logRun {
	require.NoError(t, p.Validate())
	return &logRun{t: t, x: &logSubject{p: p}, m: &logModel{limit: p.Limit, win: p.windowMs()}}
}

// setParams re-parameterises the key and reseeds the model from its log.
func (r *logRun) setParams(p Log) {
	require.NoError(r.t, p.Validate())
	r.check()
	r.x.p = p
	r.m = &logModel{limit: p.Limit, win: p.windowMs()}
	for _, e := range r.x.b {
		for range logPacking.count(e) {
			r.m.units = append(r.m.units, logPacking.stamp(e))
		}
	}
	r.from = len(r.m.units)
}

func (r *logRun) step(now, cost int64, peek bool) {
	call := traceCall{"Log", r.op, now, cost, peek}
	r.op++
	d := checkedDecide(r.t, call, r.x, now, cost, peek)
	want := r.m.decide(now, cost, peek)
	check(r.t, d == want, "%v = %s %+v, want %s %+v", call, verdict(d.Allowed), d, verdict(want.Allowed), want)
	r.longest = max(r.longest, len(r.x.b))
	// An admission prunes the log to the window, which holds at most Limit units.
	// (Lowering the limit leaves a longer log until then.)
	check(r.t, !d.Allowed || peek || int64(len(r.x.b)) <= r.x.p.Limit, "%v: %d entries for limit %d", call, len(r.x.b), r.x.p.Limit)
	ok := true
	for i, e := range r.x.b {
		ok = ok && logPacking.count(e) > 0 && (i == 0 || logPacking.stamp(r.x.b[i-1]) < logPacking.stamp(e))
	}
	check(r.t, ok, "%v: entries %x", call, r.x.b)
}

func (r *logRun) check() {
	most := r.m.busiest(r.from)
	require.LessOrEqualf(r.t, most, r.x.p.Limit, "%+v: %d units in one window", r.x.p, most)
}

// TestLogModel runs long random traces against the brute-force model: every
// reply must match it exactly, no window-long interval may hold more than
// Limit units, and the log never holds more than Limit entries.
func TestLogModel(t *testing.T) {
	for seed := range uint64(9) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x106))
			p := Log{Limit: 1 + rng.Int64N(40), Window: traceMs(rng)}
			cost := func() int64 { return traceCost(rng, p.Limit) }
			gap := func(now int64) int64 { return traceGap(rng, now, max(msNs, int64(p.Window)/p.Limit), int64(p.Window)) }
			ops := traceOps(t)
			if seed == 8 { // a log at the cap: about one entry per millisecond
				p.Limit, p.Window = MaxLogLimit, 5*time.Second
				cost = func() int64 { return 1 + rng.Int64N(20)/19 }
				gap = func(int64) int64 { return msNs + rng.Int64N(msNs/4) }
				ops = traceLen(t, 6_000, 10_000, 50_000) // past 5 s: the log reaches its cap
			}
			r := newLogRun(t, p)
			now := t0 + rng.Int64N(int64(time.Second))
			for range ops {
				now += gap(now)
				r.step(now, cost(), rng.IntN(10) == 0)
			}
			r.check()
			t.Logf("%+v: %d units admitted in %d requests, at most %d entries", p, len(r.m.units), r.op, r.longest)
		})
	}
}
