package window

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walkToken runs steps on s, checking each step's Decision and that a peek
// first gives the same reply and changes nothing.
func walkToken(t *testing.T, p Token, s State, steps []step) State {
	t.Helper()
	require.NoError(t, p.Validate())
	for i, st := range steps {
		call := fmt.Sprintf("Token(t%d=%v, cost %d)", i, st.at, st.cost)
		before := s
		peeked := p.Decide(&s, t0+int64(st.at), st.cost, true)
		require.Equalf(t, before, s, "%s peek changed the state", call)
		d := p.Decide(&s, t0+int64(st.at), st.cost, false)
		checkStep(t, call, st, d)
		assert.Equalf(t, d, peeked, "%s peek reply differs", call)
		if !d.Allowed {
			assert.Equalf(t, before, s, "%s denied but consumed", call)
		}
	}
	return s
}

func TestToken(t *testing.T) {
	walkToken(t, Token{Capacity: 3, Rate: 1, Period: time.Second}, State{}, []step{
		{0, 1, true, 2, 0, time.Second},
		{0, 2, true, 0, 0, 3 * time.Second},
		{0, 1, false, 0, time.Second, 3 * time.Second},
		{500 * time.Millisecond, 1, false, 0, 500 * time.Millisecond, 2500 * time.Millisecond},
		{time.Second, 1, true, 0, 0, 3 * time.Second},
		{time.Second, 4, false, 0, Never, 3 * time.Second},
		{time.Second, math.MaxInt64, false, 0, Never, 3 * time.Second},
		{2500 * time.Millisecond, 2, false, 1, 500 * time.Millisecond, 1500 * time.Millisecond},
		{10 * time.Second, 4, false, 3, Never, 0},
		{10 * time.Second, 3, true, 0, 0, 3 * time.Second},
		{11 * time.Second, 1, true, 0, 0, 3 * time.Second},
	})
}

// TestTokenFractionalInterval: 3 per second refills one token every
// Interval() = 333333333 ns, and remaining counts whole tokens only.
func TestTokenFractionalInterval(t *testing.T) {
	const third = 333333333 * time.Nanosecond
	walkToken(t, Token{Capacity: 3, Rate: 3, Period: time.Second}, State{}, []step{
		{0, 3, true, 0, 0, 3 * third},
		{300 * time.Millisecond, 1, false, 0, third - 300*time.Millisecond, 3*third - 300*time.Millisecond},
		{third, 1, true, 0, 0, 3 * third},
		{3 * third, 3, false, 2, third, third},
	})
}

// TestTokenEnforcedAverage: with capacity 1, one request per Period/Rate.
func TestTokenEnforcedAverage(t *testing.T) {
	walkToken(t, Token{Capacity: 1, Rate: 2, Period: time.Second}, State{}, []step{
		{0, 1, true, 0, 0, 500 * time.Millisecond},
		{250 * time.Millisecond, 1, false, 0, 250 * time.Millisecond, 250 * time.Millisecond},
		{500 * time.Millisecond, 1, true, 0, 0, 500 * time.Millisecond},
		{999 * time.Millisecond, 1, false, 0, time.Millisecond, time.Millisecond},
		{time.Second, 1, true, 0, 0, 500 * time.Millisecond},
		{time.Second, 2, false, 0, Never, 500 * time.Millisecond},
	})
}

// TestTokenJumpBackwards follows x/time/rate's TestLimiterJumpBackwards: a
// request from before the latest admitted one is decided at that one's time.
func TestTokenJumpBackwards(t *testing.T) {
	walkToken(t, Token{Capacity: 2, Rate: 1, Period: time.Second}, State{}, []step{
		{10 * time.Second, 1, true, 1, 0, time.Second},
		{9 * time.Second, 1, true, 0, 0, 2 * time.Second}, // clamped to 10 s
		{8 * time.Second, 1, false, 0, time.Second, 2 * time.Second},
		{-time.Hour, 1, false, 0, time.Second, 2 * time.Second},
		{11 * time.Second, 1, true, 0, 0, 2 * time.Second},
	})
}

func TestTokenDeniedNeverConsumes(t *testing.T) {
	p := Token{Capacity: 2, Rate: 1, Period: 5 * time.Second}
	var s State
	require.True(t, p.Decide(&s, t0, 2, false).Allowed)
	want := s
	for i := range int64(50) {
		d := p.Decide(&s, t0+i*int64(90*time.Millisecond), 1+i%3, false)
		require.Falsef(t, d.Allowed, "Token(t%d, cost %d) = allowed, want denied", i, 1+i%3)
		assert.Equal(t, want, s)
	}
	assert.True(t, p.Decide(&s, t0+int64(5*time.Second), 1, false).Allowed, "denials took tokens")
}

func TestTokenReparameterise(t *testing.T) {
	s := walkToken(t, Token{Capacity: 2, Rate: 1, Period: time.Second}, State{}, []step{
		{0, 2, true, 0, 0, 2 * time.Second},
		{0, 1, false, 0, time.Second, 2 * time.Second},
	})
	s = walkToken(t, Token{Capacity: 4, Rate: 1, Period: time.Second}, s, []step{
		{0, 1, true, 1, 0, 3 * time.Second}, // raising the capacity frees room at once
	})
	s = walkToken(t, Token{Capacity: 1, Rate: 1, Period: time.Second}, s, []step{
		{500 * time.Millisecond, 1, false, 0, 2500 * time.Millisecond, 2500 * time.Millisecond},
	})
	walkToken(t, Token{Capacity: 4, Rate: 2, Period: time.Second}, s, []step{
		{500 * time.Millisecond, 1, false, 0, time.Second, 2500 * time.Millisecond},
		{1500 * time.Millisecond, 1, true, 0, 0, 2 * time.Second},
	})
}

// TestTokenFarFuture: with a 100-year burst tolerance in 2065, TAT plus a
// full bucket's cost passes MaxInt64; the request must still be denied.
func TestTokenFarFuture(t *testing.T) {
	const century = 100 * 365 * 24 * time.Hour
	at := time.Duration(3e18 - t0) // 2065
	walkToken(t, Token{Capacity: 10, Rate: 1, Period: MaxWindow}, State{}, []step{
		{at, 10, true, 0, 0, century},
		{at, 10, false, 0, century, century},
		{at + century, 10, true, 0, 0, century},
	})
}

func TestTokenTokensAndExpiry(t *testing.T) {
	p := Token{Capacity: 5, Rate: 1, Period: time.Second}
	assert.Equal(t, int64(5), p.Tokens(State{}, t0))
	assert.Zero(t, p.Expiry(State{}))
	s := walkToken(t, p, State{}, []step{{time.Second, 3, true, 2, 0, 3 * time.Second}})
	assert.Equal(t, t0+int64(4*time.Second), p.Expiry(s))
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{{-time.Hour, 2}, {time.Second, 2}, {2500 * time.Millisecond, 3}, {4 * time.Second, 5}, {time.Hour, 5}} {
		assert.Equalf(t, tc.want, p.Tokens(s, t0+int64(tc.at)), "Tokens(%v)", tc.at)
	}
}

func TestTokenValidate(t *testing.T) {
	maxCap := int64(maxTau / time.Second)
	for _, tc := range []struct {
		p    Token
		want error
	}{
		{Token{Capacity: 1, Rate: 1, Period: time.Second}, nil},
		{Token{Capacity: 1, Rate: 1000, Period: time.Microsecond}, nil},
		{Token{Capacity: 10, Rate: 1, Period: MaxWindow}, nil},
		{Token{Capacity: maxCap, Rate: 1, Period: time.Second}, nil},
		{Token{Capacity: 0, Rate: 1, Period: time.Second}, ErrLimit},
		{Token{Capacity: -1, Rate: 1, Period: time.Second}, ErrLimit},
		{Token{Capacity: maxCap + 1, Rate: 1, Period: time.Second}, ErrLimit},
		{Token{Capacity: 11, Rate: 1, Period: MaxWindow}, ErrLimit},
		{Token{Capacity: math.MaxInt64, Rate: 1, Period: time.Second}, ErrLimit},
		{Token{Capacity: math.MaxInt64, Rate: 1, Period: MaxWindow}, ErrLimit},
		{Token{Capacity: 1, Rate: 0, Period: time.Second}, ErrRate},
		{Token{Capacity: 1, Rate: -1, Period: time.Second}, ErrRate},
		{Token{Capacity: 1, Rate: 1001, Period: time.Microsecond}, ErrRate},
		{Token{Capacity: 1, Rate: math.MaxInt64, Period: time.Second}, ErrRate},
		{Token{Capacity: 1, Rate: 1, Period: 0}, ErrWindow},
		{Token{Capacity: 1, Rate: 1, Period: -time.Second}, ErrWindow},
		{Token{Capacity: 1, Rate: 1, Period: MaxWindow + 1}, ErrWindow},
	} {
		assert.ErrorIsf(t, tc.p.Validate(), tc.want, "%+v.Validate()", tc.p)
		kp := Params{Kind: KindToken, Limit: tc.p.Capacity, Rate: tc.p.Rate, Period: tc.p.Period}
		assert.Equal(t, tc.p.Validate(), kp.Validate())
	}
}
