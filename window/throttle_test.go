package window

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throttleStep is one CL.THROTTLE call on a fake clock and the reply it must get.
type throttleStep struct {
	at                         time.Duration // since t0; may step backwards
	q                          int64
	limited                    bool
	remaining, retry, resetSec int64
	changed                    bool
}

func limitedWord(limited bool) string {
	if limited {
		return "limited"
	}
	return "allowed"
}

// walkThrottle runs steps on s under p and returns the state they leave.
// A call that reports no change must leave s as it was.
func walkThrottle(t *testing.T, p Throttle, s State, steps []throttleStep) State {
	t.Helper()
	require.NoError(t, p.Validate())
	for i, st := range steps {
		call := fmt.Sprintf("Throttle(t%d=%v, q %d)", i, st.at, st.q)
		before := s
		r, changed := p.Decide(&s, t0+int64(st.at), st.q)
		assert.Equalf(t, st.limited, r.Limited, "%s = %s, want %s", call, limitedWord(r.Limited), limitedWord(st.limited))
		want := ThrottleReply{st.limited, p.MaxBurst + 1, st.remaining, st.retry, st.resetSec}
		assert.Equalf(t, want, r, "%s reply", call)
		assert.Equalf(t, st.changed, changed, "%s changed", call)
		if !changed {
			assert.Equalf(t, before, s, "%s reported no change but changed the state", call)
		}
	}
	return s
}

// TestThrottleREADME is redis-cell's README example:
// CL.THROTTLE user123 15 30 60 → [0, 16, 15, -1, 2].
func TestThrottleREADME(t *testing.T) {
	walkThrottle(t, Throttle{MaxBurst: 15, Count: 30, Period: 60}, State{}, []throttleStep{
		{0, 1, false, 15, -1, 2, true},
	})
}

// TestThrottleRedisCell is redis-cell's own test table (it_rate_limits),
// with its durations rounded as the command replies them.
func TestThrottleRedisCell(t *testing.T) {
	const ms = time.Millisecond
	walkThrottle(t, Throttle{MaxBurst: 4, Count: 1, Period: 1}, State{}, []throttleStep{
		{0, 6, true, 5, -1, 0, false}, // never more than the limit at once
		{0, 1, false, 4, -1, 1, true},
		{0, 1, false, 3, -1, 2, true},
		{0, 1, false, 2, -1, 3, true},
		{0, 1, false, 1, -1, 4, true},
		{0, 1, false, 0, -1, 5, true},
		{0, 1, true, 0, 1, 5, false},
		{3000 * ms, 1, false, 2, -1, 3, true},
		{3100 * ms, 1, false, 1, -1, 4, true}, // reset 3.9 s rounds up
		{4000 * ms, 1, false, 1, -1, 4, true},
		{8000 * ms, 1, false, 4, -1, 1, true},
		{9500 * ms, 1, false, 4, -1, 1, true},
		{9500 * ms, 0, false, 4, -1, 1, false}, // quantity 0 peeks
		{9500 * ms, 2, false, 2, -1, 3, true},
		{9500 * ms, 5, true, 2, 3, 3, false},
	})
}

// TestThrottleRounding: seconds round up only when the remainder has a
// non-zero millisecond part, so 2.0004 s is 2 and 2.001 s is 3. A client told
// "retry after 0" is then 0.4 ms early, as with redis-cell.
func TestThrottleRounding(t *testing.T) {
	const ms, us = time.Millisecond, time.Microsecond
	walkThrottle(t, Throttle{MaxBurst: 4, Count: 1, Period: 1}, State{}, []throttleStep{
		{0, 3, false, 2, -1, 3, true},            // TAT t0+3s
		{999600 * us, 0, false, 2, -1, 2, false}, // reset 2.0004 s
		{999 * ms, 0, false, 2, -1, 3, false},    // reset 2.001 s
		{999600 * us, 3, true, 2, 0, 2, false},   // retry 0.0004 s
		{998 * ms, 3, true, 2, 1, 3, false},      // retry 0.002 s
		{2 * time.Second, 1, false, 3, -1, 2, true},
	})
}

// TestThrottleRefund: a negative quantity gives units back, but never more
// than a full bucket: the TAT stops at now. (redis-cell moves it into the
// past, replies remaining 103 of 5 here, and sets a negative TTL.)
func TestThrottleRefund(t *testing.T) {
	p := Throttle{MaxBurst: 4, Count: 1, Period: 1}
	s := walkThrottle(t, p, State{}, []throttleStep{
		{0, 3, false, 2, -1, 3, true},
		{0, -1, false, 3, -1, 2, true},
		{500 * time.Millisecond, -100, false, 5, -1, 0, true},
		{500 * time.Millisecond, 5, false, 0, -1, 5, true},
		{time.Second, math.MinInt64, false, 5, -1, 0, true},
	})
	assert.Equal(t, t0+int64(time.Second), p.Token().Expiry(s), "a refunded key expires now, not in the past")
	s = walkThrottle(t, p, State{}, []throttleStep{{0, -1, false, 5, -1, 0, true}})
	assert.Equal(t, t0, p.Token().Expiry(s), "a refund on a new key leaves nothing to keep")
}

// TestThrottlePeek: quantity 0 replies as redis-cell does and writes nothing,
// so a store creates no key.
func TestThrottlePeek(t *testing.T) {
	walkThrottle(t, Throttle{MaxBurst: 2, Count: 1, Period: 10}, State{}, []throttleStep{
		{0, 0, false, 3, -1, 0, false},
		{time.Hour, 0, false, 3, -1, 0, false},
	})
}

// TestThrottleHugeQuantity: no quantity overflows T·q; over the limit it is
// refused for good.
func TestThrottleHugeQuantity(t *testing.T) {
	walkThrottle(t, Throttle{MaxBurst: 4, Count: 1, Period: 1}, State{}, []throttleStep{
		{0, math.MaxInt64, true, 5, -1, 0, false},
		{0, 6, true, 5, -1, 0, false},
		{0, 5, false, 0, -1, 5, true},
		{0, math.MaxInt64, true, 0, -1, 5, false},
		{0, math.MaxInt64 / int64(time.Second), true, 0, -1, 5, false},
	})
}

// TestThrottleLoweredLimit: parameters apply to the existing TAT at once; a
// TAT beyond the new τ is limited even for a peek.
func TestThrottleLoweredLimit(t *testing.T) {
	s := walkThrottle(t, Throttle{MaxBurst: 9, Count: 1, Period: 1}, State{}, []throttleStep{
		{0, 10, false, 0, -1, 10, true},
	})
	walkThrottle(t, Throttle{MaxBurst: 1, Count: 1, Period: 1}, s, []throttleStep{
		{0, 0, true, 0, 8, 10, false},
		{0, 1, true, 0, 9, 10, false},
		{9 * time.Second, 1, false, 0, -1, 2, true},
	})
}

// TestThrottleJumpBackwards: the clock is clamped to the latest write.
func TestThrottleJumpBackwards(t *testing.T) {
	walkThrottle(t, Throttle{MaxBurst: 0, Count: 1, Period: 1}, State{}, []throttleStep{
		{10 * time.Second, 1, false, 0, -1, 1, true},
		{5 * time.Second, 1, true, 0, 1, 1, false}, // clamped to 10 s
		{-time.Hour, 0, false, 0, -1, 1, false},    // a peek at 10 s: nothing left, but not over
		{11 * time.Second, 1, false, 0, -1, 1, true},
		{10500 * time.Millisecond, 1, true, 0, 1, 1, false}, // clamped to 11 s
	})
}

// TestThrottleMicroseconds: remaining is computed in whole microseconds, as
// redis-cell does. Below 1 µs per unit, where redis-cell divides by zero, it is
// computed in nanoseconds.
func TestThrottleMicroseconds(t *testing.T) {
	// T = 1.5 µs reads as 1 µs: redis-cell replies 13 of 10 remaining.
	walkThrottle(t, Throttle{MaxBurst: 9, Count: 2_000_000, Period: 3}, State{}, []throttleStep{
		{0, 1, false, 13, -1, 0, true},
	})
	// T = 500 ns.
	walkThrottle(t, Throttle{MaxBurst: 9, Count: 2_000_000, Period: 1}, State{}, []throttleStep{
		{0, 1, false, 9, -1, 0, true},
		{0, 9, false, 0, -1, 0, true},
		{0, 1, true, 0, 0, 0, false},
	})
}

func TestThrottleValidate(t *testing.T) {
	maxPeriod := int64(MaxWindow / time.Second)
	for _, tc := range []struct {
		p    Throttle
		want error
	}{
		{Throttle{MaxBurst: 0, Count: 1, Period: 1}, nil},
		{Throttle{MaxBurst: 15, Count: 30, Period: 60}, nil},
		{Throttle{MaxBurst: 0, Count: 1, Period: maxPeriod}, nil},
		{Throttle{MaxBurst: 0, Count: int64(time.Second), Period: 1}, nil}, // T = 1 ns
		{Throttle{MaxBurst: int64(maxTau/time.Second) - 1, Count: 1, Period: 1}, nil},
		{Throttle{MaxBurst: -1, Count: 1, Period: 1}, ErrLimit},
		{Throttle{MaxBurst: math.MinInt64, Count: 1, Period: 1}, ErrLimit},
		{Throttle{MaxBurst: int64(maxTau / time.Second), Count: 1, Period: 1}, ErrLimit},
		{Throttle{MaxBurst: math.MaxInt64, Count: 1, Period: 1}, ErrLimit},
		{Throttle{MaxBurst: 0, Count: 0, Period: 1}, ErrRate},
		{Throttle{MaxBurst: 0, Count: -1, Period: 1}, ErrRate},
		{Throttle{MaxBurst: 0, Count: int64(time.Second) + 1, Period: 1}, ErrRate}, // T < 1 ns
		{Throttle{MaxBurst: 0, Count: math.MaxInt64, Period: maxPeriod}, ErrRate},
		{Throttle{MaxBurst: 0, Count: 1, Period: 0}, ErrWindow},
		{Throttle{MaxBurst: 0, Count: 1, Period: -1}, ErrWindow},
		{Throttle{MaxBurst: 0, Count: 1, Period: maxPeriod + 1}, ErrWindow},
		{Throttle{MaxBurst: 0, Count: 1, Period: math.MaxInt64}, ErrWindow},
		{Throttle{MaxBurst: math.MaxInt64, Count: math.MaxInt64, Period: math.MaxInt64}, ErrWindow},
	} {
		err := tc.p.Validate()
		assert.ErrorIsf(t, err, tc.want, "%+v.Validate()", tc.p)
		if err == nil {
			assert.NoErrorf(t, tc.p.Token().Validate(), "%+v.Token()", tc.p)
		}
	}
}

// TestThrottleSharesTokenState: CL.THROTTLE and RL.TOKEN are one GCRA over one
// State, so either may drive a key and both read it the same way.
func TestThrottleSharesTokenState(t *testing.T) {
	p := Throttle{MaxBurst: 4, Count: 2, Period: 3}
	tk := p.Token()
	rng := rand.New(rand.NewPCG(1, 2))
	var s State
	now := t0
	for i := range 2_000 {
		now += rng.Int64N(int64(2 * time.Second))
		cost := 1 + rng.Int64N(6)
		ts, cs := s, s
		d := tk.Decide(&ts, now, cost, false)
		r, _ := p.Decide(&cs, now, cost)
		call := fmt.Sprintf("op %d: cost %d at t0+%v", i, cost, time.Duration(now-t0))
		require.Equalf(t, ts, cs, "%s: states differ", call)
		require.Equalf(t, d.Allowed, !r.Limited, "%s: allowed", call)
		require.Equalf(t, d.Remaining, r.Remaining, "%s: remaining", call)
		require.Equalf(t, ceilSeconds(int64(d.Reset)), r.ResetAfter, "%s: reset", call)
		if !d.Allowed && d.Wait != Never {
			require.Equalf(t, ceilSeconds(int64(d.Wait)), r.RetryAfter, "%s: wait", call)
		}
		if rng.IntN(2) == 0 {
			s = ts
		} else {
			s = cs
		}
	}
}

// cellModel is a direct transcription of redis-cell v0.5.0's rate_limit and
// CL.THROTTLE reply, with rlstore's deliberate differences marked. It keeps
// the key as Redis would: a TAT, and whether the key exists.
type cellModel struct {
	tat  int64
	set  bool
	last int64 // rlstore: the clock never runs behind the latest write
}

func (m *cellModel) throttle(p Throttle, now, quantity int64) (ThrottleReply, bool) {
	now = max(now, m.last)
	emission := int64(float64(p.Period*1e9) / float64(p.Count)) // Rate::per_period
	if emission != p.Period*1e9/p.Count {
		panic("model parameters must not depend on float rounding")
	}
	limit, dvt := p.MaxBurst+1, emission*(p.MaxBurst+1)
	tat := now // a missing key, or one Redis expired at its TAT
	if m.set && m.tat > now {
		tat = m.tat
	}
	// Exact arithmetic where redis-cell's i64 would overflow on a huge quantity.
	increment := new(big.Int).Mul(big.NewInt(emission), big.NewInt(quantity))
	newTat := new(big.Int).Add(big.NewInt(tat), increment)
	if now > tat {
		newTat.Add(big.NewInt(now), increment)
	}
	if newTat.Cmp(big.NewInt(now)) < 0 { // rlstore: a refund never moves the TAT into the past
		newTat.SetInt64(now)
	}
	allowAt := new(big.Int).Sub(newTat, big.NewInt(dvt))
	diff := new(big.Int).Sub(big.NewInt(now), allowAt)
	limited := diff.Sign() < 0
	retry, ttl := -int64(time.Second), int64(0)
	if limited {
		if increment.Cmp(big.NewInt(dvt)) <= 0 {
			retry = -diff.Int64()
		}
		ttl = tat - now
	} else {
		ttl = newTat.Int64() - now
		if quantity != 0 { // rlstore: a peek writes nothing
			m.tat, m.set, m.last = newTat.Int64(), true, now
		}
	}
	var remaining int64
	if next := dvt - ttl; next > -emission {
		remaining = int64(float64(next/1000) / float64(emission/1000))
	}
	// rlstore: floored at 0. When T is not whole microseconds and the TAT is
	// beyond τ (the limit was lowered), redis-cell can reply -1.
	remaining = max(0, remaining)
	return ThrottleReply{limited, limit, remaining, cellSeconds(retry), cellSeconds(ttl)}, !limited && quantity != 0
}

// cellSeconds is the command's rounding: whole seconds, plus one if the
// sub-second part has whole milliseconds.
func cellSeconds(d int64) int64 {
	whole, subsecMs := d/1e9, d%1e9/1e6
	if subsecMs > 0 {
		whole++
	}
	return whole
}

// throttleRun drives one key through a random trace or a fuzz program,
// checking every reply against the transcription of redis-cell.
type throttleRun struct {
	t  *testing.T
	p  Throttle
	s  State
	m  cellModel
	op int
}

func newThrottleRun(t *testing.T, p Throttle) *throttleRun {
	require.NoError(t, p.Validate())
	return &throttleRun{t: t, p: p}
}

// setParams re-parameterises the key: the TAT stays, as in redis-cell.
func (r *throttleRun) setParams(p Throttle) {
	require.NoError(r.t, p.Validate())
	r.p = p
}

func (r *throttleRun) step(now, q int64) {
	call := traceCall{"Throttle", r.op, now, q, false}
	r.op++
	before := r.s
	got, changed := r.p.Decide(&r.s, now, q)
	want, wantChanged := r.m.throttle(r.p, now, q)
	check(r.t, got == want && changed == wantChanged, "%v = %+v (changed %v), want %+v (changed %v)", call, got, changed, want, wantChanged)
	check(r.t, changed || r.s == before, "%v: no change reported, but the state changed", call)
	check(r.t, !changed || r.p.Token().Expiry(r.s) >= max(now, int64(before[1])), "%v: the key expires in the past", call)
}

// throttleQuantity picks a quantity: mostly small, sometimes a peek, a
// refund, the whole limit or more, or an extreme of int64.
func throttleQuantity(rng *rand.Rand, limit int64) int64 {
	switch n := rng.IntN(40); {
	case n < 4:
		return 0
	case n < 8:
		return -1 - rng.Int64N(limit+2)
	case n == 8:
		return math.MaxInt64
	case n == 9:
		return math.MinInt64
	}
	return traceCost(rng, limit)
}

// randomThrottle picks parameters whose emission interval is exact in
// float64, as the transcription requires; some are not whole microseconds.
func randomThrottle(rng *rand.Rand) Throttle {
	p := Throttle{MaxBurst: rng.Int64N(40), Count: 1 + rng.Int64N(100), Period: 1 + rng.Int64N(3600)}
	switch rng.IntN(4) {
	case 0:
		p.Count, p.Period = 3+rng.Int64N(5), 1
	case 1:
		p.Count = 1_000_000 + rng.Int64N(1_000_000)
	}
	return p
}

// TestThrottleModel runs long random traces against the transcription of
// redis-cell: every reply and every write must match it exactly.
func TestThrottleModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0xce11))
			p := randomThrottle(rng)
			r := newThrottleRun(t, p)
			tau := p.interval() * (p.MaxBurst + 1)
			now := t0 + rng.Int64N(int64(time.Second))
			for range traceOps(t) {
				now += traceGap(rng, now, p.interval(), tau)
				r.step(now, throttleQuantity(rng, p.MaxBurst+1))
			}
			t.Logf("%+v: %d calls", p, r.op)
		})
	}
}
