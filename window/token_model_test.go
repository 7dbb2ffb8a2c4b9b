package window

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tokenModel is the textbook token bucket in exact rational arithmetic: it
// holds tokens as of last, refills one token per Interval() ns up to capacity,
// and admits a request if it holds at least cost tokens.
type tokenModel struct {
	capacity, interval int64
	tokens             *big.Rat // as of last
	last               int64    // the latest admitted time: the clock never runs behind it
}

func newTokenModel(p Token) *tokenModel {
	return &tokenModel{capacity: p.Capacity, interval: p.Interval(), tokens: big.NewRat(p.Capacity, 1)}
}

// seedTokenModel starts a model from a Token's state under new parameters, as
// re-parameterising a key does: the bucket is as far from full, in time, as before.
func seedTokenModel(p Token, s State) *tokenModel {
	m := newTokenModel(p)
	m.last = int64(s[1])
	ahead := big.NewRat(max(int64(s[0])-m.last, 0), m.interval)
	m.tokens.Sub(m.tokens, ahead)
	return m
}

func (m *tokenModel) clock(now int64) int64 { return max(now, m.last) }

// avail returns the tokens at now, which must be clamped already.
func (m *tokenModel) avail(now int64) *big.Rat {
	a := new(big.Rat).Add(m.tokens, big.NewRat(now-m.last, m.interval))
	if a.Cmp(big.NewRat(m.capacity, 1)) > 0 {
		a.SetInt64(m.capacity)
	}
	return a
}

// decide returns the model's Decision at now (clamped) and charges it if admitted.
func (m *tokenModel) decide(now, cost int64) Decision {
	a, c := m.avail(now), big.NewRat(cost, 1)
	d := Decision{Limit: m.capacity}
	switch {
	case cost > m.capacity:
		d.Wait = Never
	case a.Cmp(c) < 0:
		d.Wait = m.duration(new(big.Rat).Sub(c, a))
	default:
		d.Allowed = true
		a.Sub(a, c)
		m.tokens, m.last = a, now
	}
	d.Remaining = max(0, floor(a))
	d.Reset = m.duration(new(big.Rat).Sub(big.NewRat(m.capacity, 1), a))
	return d
}

// duration converts tokens to the ns they take to refill. Tokens only ever
// change in steps of 1/interval, so this is a whole number.
func (m *tokenModel) duration(tokens *big.Rat) time.Duration {
	return time.Duration(floor(new(big.Rat).Mul(tokens, big.NewRat(m.interval, 1))))
}

func floor(r *big.Rat) int64 { return new(big.Int).Div(r.Num(), r.Denom()).Int64() }

// tokenBound checks the bucket's promise over any stretch of a trace: from
// admitted request i to j (both included), at most capacity + elapsed/Interval()
// tokens are admitted. It keeps, in ns, A = interval·(tokens admitted so far)
// and the least A-before-i minus T(i) seen, so that each step is O(1).
type tokenBound struct {
	tau, interval int64
	admitted      int64 // interval · tokens admitted so far
	least         int64 // min over i of admitted-before-i − T(i)
	any           bool
}

// admit records an admission of cost at t (relative to t0) and reports the
// largest excess over the bound of any stretch ending here, if positive.
func (b *tokenBound) admit(t, cost int64) (excess int64) {
	if !b.any || b.admitted-t < b.least {
		b.least, b.any = b.admitted-t, true
	}
	b.admitted += cost * b.interval
	return b.admitted - t - b.least - b.tau
}

// tokenRun drives one key through Token and its model, checking every reply.
type tokenRun struct {
	t     *testing.T
	p     Token
	s     State
	m     *tokenModel
	bound tokenBound
	op    int
}

type tokenCall struct {
	op        int
	now, cost int64
}

func (c tokenCall) String() string {
	return fmt.Sprintf("op %d: Token(t0+%v, cost %d)", c.op, time.Duration(c.now-t0), c.cost)
}

func newTokenRun(t *testing.T, p Token) *tokenRun {
	require.NoError(t, p.Validate())
	r := &tokenRun{t: t, p: p, m: newTokenModel(p)}
	r.bound = tokenBound{tau: p.Interval() * p.Capacity, interval: p.Interval()}
	return r
}

// setParams re-parameterises the key and reseeds the model from its state.
// The bound starts over: a raised capacity legitimately frees room.
func (r *tokenRun) setParams(p Token) {
	require.NoError(r.t, p.Validate())
	r.p, r.m = p, seedTokenModel(p, r.s)
	r.bound = tokenBound{tau: p.Interval() * p.Capacity, interval: p.Interval()}
}

// step decides one request, peeking first: the peek must change nothing and
// give the reply the real call gives, and both must equal the model's.
func (r *tokenRun) step(now, cost int64, peek bool) {
	t, call := r.t, tokenCall{r.op, now, cost}
	r.op++
	before := r.s
	d := r.p.Decide(&r.s, now, cost, true)
	require.Equalf(t, before, r.s, "%v: peek changed the state", call)
	eff := r.m.clock(now)
	if peek {
		saved := *r.m
		want := r.m.decide(eff, cost)
		*r.m = saved
		require.Equalf(t, want, d, "%v = %+v, want %+v", call, d, want)
		return
	}
	real := r.p.Decide(&r.s, now, cost, false)
	require.Equalf(t, d, real, "%v: peek and real replies differ", call)
	want := r.m.decide(eff, cost)
	require.Equalf(t, want, real, "%v = %s %+v, want %s %+v", call, verdict(real.Allowed), real, verdict(want.Allowed), want)
	if !real.Allowed {
		require.Equalf(t, before, r.s, "%v: denied but consumed", call)
		return
	}
	require.Equalf(t, eff+int64(real.Reset), r.p.Expiry(r.s), "%v expiry", call)
	excess := r.bound.admit(eff-t0, cost)
	require.LessOrEqualf(t, excess, int64(0), "%v: %d ns worth of tokens over capacity + elapsed/interval", call, excess)
}

// randomToken picks parameters; seed%4 picks a band: sub-second periods up to
// a rate of one per ns, fractional intervals, minutes to hours, and days.
func randomToken(rng *rand.Rand, band uint64) Token {
	p := Token{Capacity: 1 + rng.Int64N(40)}
	switch band % 4 {
	case 0:
		p.Period = time.Duration(1 + rng.Int64N(int64(time.Second)))
		p.Rate = 1 + rng.Int64N(min(int64(p.Period), 1000))
	case 1:
		p.Period, p.Rate = time.Second, 1+rng.Int64N(1000)
	case 2:
		p.Period, p.Rate = time.Duration(1+rng.Int64N(3600))*time.Second, 1+rng.Int64N(100)
	default:
		p.Period, p.Rate = time.Duration(1+rng.Int64N(30))*24*time.Hour, 1+rng.Int64N(10)
	}
	return p
}

// TestTokenModel runs long random traces against an exact rational token
// bucket: every reply must match it field for field, and no stretch of the
// trace may admit more than capacity + elapsed/Interval() tokens.
func TestTokenModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x70ce))
			r := newTokenRun(t, randomToken(rng, seed))
			t.Logf("%+v", r.p)
			now := t0 + rng.Int64N(sec)
			for range modelOps(t) {
				now += randomGap(rng, now, time.Duration(r.p.Interval()*r.p.Capacity), r.p.Capacity)
				r.step(now, randomCost(rng, r.p.Capacity), rng.IntN(10) == 0)
			}
			t.Logf("%d tokens admitted in %d steps over %v", r.bound.admitted/r.p.Interval(), r.op, time.Duration(now-t0))
		})
	}
}
