package window

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixedFirstHit: a window starts at the first request it admits and
// lasts Window, wherever that falls; the next starts at the first admission
// after it ends. t0 is a whole minute, so the aligned windows would end at
// 10 s, 20 s, …
func TestFixedFirstHit(t *testing.T) {
	walkFixed(t, Fixed{Limit: 3, Window: 10 * time.Second, FirstHit: true}, State{}, []step{
		{3 * time.Second, 1, true, 2, 0, 10 * time.Second},
		{9 * time.Second, 2, true, 0, 0, 4 * time.Second},
		{10 * time.Second, 1, false, 0, 3 * time.Second, 3 * time.Second}, // aligned, this would start a window
		{13*time.Second - time.Nanosecond, 1, false, 0, time.Nanosecond, time.Nanosecond},
		{13 * time.Second, 4, false, 3, Never, 0}, // ended: empty, nothing to reset
		{17 * time.Second, 1, true, 2, 0, 10 * time.Second},
		{26 * time.Second, 2, true, 0, 0, time.Second},
		{26 * time.Second, 1, false, 0, time.Second, time.Second},
		{27 * time.Second, 3, true, 0, 0, 10 * time.Second},
	})
}

// TestFixedFirstHitJumpBackwards: the clock is clamped to the window's
// start, so stepping back cannot end it early or start an earlier one.
func TestFixedFirstHitJumpBackwards(t *testing.T) {
	walkFixed(t, Fixed{Limit: 2, Window: 10 * time.Second, FirstHit: true}, State{}, []step{
		{15 * time.Second, 1, true, 1, 0, 10 * time.Second},
		{5 * time.Second, 1, true, 0, 0, 10 * time.Second}, // clamped to 15 s
		{-time.Hour, 1, false, 0, 10 * time.Second, 10 * time.Second},
		{24 * time.Second, 1, false, 0, time.Second, time.Second},
		{25 * time.Second, 2, true, 0, 0, 10 * time.Second},
	})
}

// TestFixedFirstHitCountAndExpiry: the state expires Window after the
// window's first admission, and counts until then.
func TestFixedFirstHitCountAndExpiry(t *testing.T) {
	p := Fixed{Limit: 5, Window: 10 * time.Second, FirstHit: true}
	s := walkFixed(t, p, State{}, []step{
		{2 * time.Second, 2, true, 3, 0, 10 * time.Second},
		{11 * time.Second, 1, true, 2, 0, time.Second},
	})
	assert.Equal(t, State{uint64(t0 + int64(2*time.Second)), 3}, s)
	assert.Equal(t, t0+int64(12*time.Second), p.Expiry(s))
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{{-time.Hour, 3}, {2 * time.Second, 3}, {12*time.Second - 1, 3}, {12 * time.Second, 0}} {
		assert.Equalf(t, tc.want, p.Count(s, t0+int64(tc.at)), "Count(%v)", tc.at)
	}
}

// TestFixedAnchorChange: changing the anchor of a live key reads its state
// under the new anchor at once. An aligned key's latest admission starts a
// first-hit window (it keeps its count a Window from then, longer than
// aligned); a first-hit key read aligned keeps its count while its start
// is in the current aligned window.
func TestFixedAnchorChange(t *testing.T) {
	aligned := Fixed{Limit: 2, Window: 10 * time.Second}
	first := aligned
	first.FirstHit = true
	s := walkFixed(t, aligned, State{}, []step{{8 * time.Second, 2, true, 0, 0, 2 * time.Second}})
	s = walkFixed(t, first, s, []step{
		{12 * time.Second, 1, false, 0, 6 * time.Second, 6 * time.Second},
		{18 * time.Second, 2, true, 0, 0, 10 * time.Second},
	})
	walkFixed(t, aligned, s, []step{
		{19 * time.Second, 1, false, 0, time.Second, time.Second},
		{20 * time.Second, 2, true, 0, 0, 10 * time.Second},
	})
}

// TestFixedFirstHitDeniedNeverConsumes: denials neither count nor move the
// window's start, so a window still ends Window after its first admission.
func TestFixedFirstHitDeniedNeverConsumes(t *testing.T) {
	p := Fixed{Limit: 2, Window: 5 * time.Second, FirstHit: true}
	var s State
	require.True(t, p.Decide(&s, t0, 2, false).Allowed)
	want := s
	for i := range int64(50) {
		d := p.Decide(&s, t0+i*int64(90*time.Millisecond), 1+i%3, false)
		require.Falsef(t, d.Allowed, "Fixed(FirstHit, t%d) = allowed, want denied", i)
		require.Equal(t, want, s)
	}
	assert.True(t, p.Decide(&s, t0+int64(5*time.Second), 2, false).Allowed, "denials charged the window")
}

func TestFixedFirstHitParams(t *testing.T) {
	p := Params{Kind: KindFixed, Limit: 3, Period: time.Second, FirstHit: true}
	require.NoError(t, p.Validate())
	assert.Equal(t, Fixed{Limit: 3, Window: time.Second, FirstHit: true}, p.Fixed())
	for _, k := range []Kind{KindSlide, KindToken, KindLog, KindLeaky, KindLease, KindReserve} {
		q := Params{Kind: k, Limit: 3, Rate: 1, Period: time.Second, FirstHit: true}
		assert.ErrorIsf(t, q.Validate(), ErrKind, "%v with FirstHit", k)
	}
}

// TestFixedRefundKeepsWindow: a window refunded to 0 units keeps its key
// until its end, as a Redis INCR+EXPIRE counter given back with DECRBY
// keeps its TTL: with FirstHit the next admission counts in that window
// (its reset is the rest of it), not in a new one; an aligned key lasts to
// its window's edge. Once the window ends, the key is gone.
func TestFixedRefundKeepsWindow(t *testing.T) {
	for _, first := range []bool{true, false} {
		p := Params{Kind: KindFixed, Limit: 1, Period: 5 * time.Second, FirstHit: first}
		var s State
		d, _ := p.Decide(&s, nil, t0, 1, false)
		require.True(t, d.Allowed)
		_, ok := p.Adjust(&s, nil, t0+int64(time.Second), -1)
		require.True(t, ok)
		end := t0 + int64(5*time.Second) // t0 is a whole minute: the aligned window ends there too
		assert.Equalf(t, end, p.Expiry(s, nil), "Expiry after a refund to 0 (FirstHit %v)", first)
		assert.Zerof(t, p.Count(s, nil, t0+int64(time.Second)), "Count after a refund to 0 (FirstHit %v)", first)
		d, _ = p.Decide(&s, nil, t0+int64(2*time.Second), 1, false)
		require.Truef(t, d.Allowed, "Fixed(t2s) after a refund = denied, want allowed (FirstHit %v)", first)
		assert.Equalf(t, 3*time.Second, d.Reset, "Fixed(t2s) after a refund: reset (FirstHit %v)", first)
		d, _ = p.Decide(&s, nil, t0+int64(4*time.Second), 1, false)
		assert.Falsef(t, d.Allowed, "Fixed(t4s) = allowed, want denied: the window holds 1 (FirstHit %v)", first)
		_, _ = p.Adjust(&s, nil, t0+int64(4*time.Second), -1)
		assert.Equal(t, end, p.Expiry(s, nil))
		d, _ = p.Decide(&s, nil, end, 1, false)
		require.True(t, d.Allowed)
		assert.Equalf(t, 5*time.Second, d.Reset, "after the window's end a new one starts (FirstHit %v)", first)
	}
	assert.Zero(t, Fixed{Limit: 1, Window: time.Second}.Expiry(State{}), "an empty key never restricted anything")
}
