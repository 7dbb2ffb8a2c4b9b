package window

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is the fake clock's origin: a whole second, so steps read as offsets.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()

// sec0 is t0 in unix seconds.
var sec0 = t0 / int64(time.Second)

func verdict(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

type step struct {
	at            time.Duration // since t0; may step backwards
	cost          int64
	wantAllowed   bool
	wantRemaining int64
	wantWait      time.Duration
	wantReset     time.Duration
}

// checkStep asserts d against st. call names the request, as in "Slide(t3, cost 2)".
func checkStep(t *testing.T, call string, st step, d Decision) {
	t.Helper()
	assert.Equalf(t, st.wantAllowed, d.Allowed, "%s = %s, want %s", call, verdict(d.Allowed), verdict(st.wantAllowed))
	assert.Equalf(t, st.wantRemaining, d.Remaining, "%s remaining", call)
	assert.Equalf(t, st.wantWait, d.Wait, "%s wait", call)
	assert.Equalf(t, st.wantReset, d.Reset, "%s reset", call)
}

// grow gives b room for one more counter, as a store must before Decide.
func grow(b []uint64) []uint64 {
	if len(b) == cap(b) {
		b = append(b, 0)[:len(b)]
	}
	return b
}

// walkSlide runs steps on b, checking each step's Decision and that a peek
// first gives the same reply and changes nothing.
func walkSlide(t *testing.T, p Slide, b []uint64, steps []step) []uint64 {
	t.Helper()
	require.NoError(t, p.Validate())
	for i, st := range steps {
		call := fmt.Sprintf("Slide(t%d=%v, cost %d)", i, st.at, st.cost)
		before := append([]uint64{}, b...) // non-nil, like what Decide returns
		peeked, pb := p.Decide(grow(b), t0+int64(st.at), st.cost, true)
		require.Equalf(t, before, pb, "%s peek changed the counters", call)
		var d Decision
		d, b = p.Decide(grow(b), t0+int64(st.at), st.cost, false)
		checkStep(t, call, st, d)
		assert.Equalf(t, d, peeked, "%s peek reply differs", call)
		if !d.Allowed {
			assert.Equalf(t, before, b, "%s denied but consumed", call)
		}
	}
	return b
}

func TestSlide(t *testing.T) {
	walkSlide(t, Slide{Limit: 3, Window: 10 * time.Second}, nil, []step{
		{0, 1, true, 2, 0, 10 * time.Second},
		{500 * time.Millisecond, 2, true, 0, 0, 9500 * time.Millisecond},
		{time.Second, 1, false, 0, 9 * time.Second, 9 * time.Second},
		{9999 * time.Millisecond, 1, false, 0, time.Millisecond, time.Millisecond},
		{10 * time.Second, 1, true, 2, 0, 10 * time.Second},
		{10500 * time.Millisecond, 3, false, 2, 9500 * time.Millisecond, 9500 * time.Millisecond},
		{12 * time.Second, 2, true, 0, 0, 10 * time.Second},
		// Only second 10's unit must leave for one more to fit; the key is full until second 12's leave.
		{15 * time.Second, 1, false, 0, 5 * time.Second, 7 * time.Second},
		{20 * time.Second, 1, true, 0, 0, 10 * time.Second},
		{22 * time.Second, 3, false, 2, 8 * time.Second, 8 * time.Second},
		{time.Minute, 3, true, 0, 0, 10 * time.Second},
	})
}

func TestSlideOneSecondWindow(t *testing.T) {
	walkSlide(t, Slide{Limit: 1, Window: time.Second}, nil, []step{
		{100 * time.Millisecond, 1, true, 0, 0, 900 * time.Millisecond},
		{999*time.Millisecond + 999999, 1, false, 0, time.Nanosecond, time.Nanosecond},
		{time.Second, 1, true, 0, 0, time.Second},
	})
}

func TestSlideCostOverLimit(t *testing.T) {
	walkSlide(t, Slide{Limit: 3, Window: 10 * time.Second}, nil, []step{
		{0, 4, false, 3, Never, 0},
		{0, 2, true, 1, 0, 10 * time.Second},
		{time.Second, 4, false, 1, Never, 9 * time.Second},
		{time.Second, math.MaxInt64, false, 1, Never, 9 * time.Second},
	})
}

// TestSlideJumpBackwards follows x/time/rate's TestLimiterJumpBackwards: a clock
// that steps back is clamped to the newest counter, so it cannot reopen a window.
func TestSlideJumpBackwards(t *testing.T) {
	walkSlide(t, Slide{Limit: 2, Window: 3 * time.Second}, nil, []step{
		{10 * time.Second, 1, true, 1, 0, 3 * time.Second},
		{8 * time.Second, 1, true, 0, 0, 3 * time.Second}, // clamped to 10 s
		{7 * time.Second, 1, false, 0, 3 * time.Second, 3 * time.Second},
		{-time.Hour, 1, false, 0, 3 * time.Second, 3 * time.Second},
		{12900 * time.Millisecond, 1, false, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{13 * time.Second, 1, true, 1, 0, 3 * time.Second},
		{12 * time.Second, 1, true, 0, 0, 3 * time.Second}, // clamped to 13 s
	})
}

func TestSlideBeforeEpoch(t *testing.T) {
	p := Slide{Limit: 1, Window: 2 * time.Second}
	d, b := p.Decide(make([]uint64, 0, 1), -5, 1, false)
	require.True(t, d.Allowed)
	assert.Equal(t, []uint64{slidePacking.pack(0, 1)}, b)
	assert.Equal(t, 2*time.Second, d.Reset)
}

func TestSlideDeniedNeverConsumes(t *testing.T) {
	p := Slide{Limit: 2, Window: 5 * time.Second}
	_, b := p.Decide(make([]uint64, 0, 4), t0, 2, false)
	want := slices.Clone(b)
	for i := range int64(50) {
		at := t0 + i*int64(90*time.Millisecond)
		d, got := p.Decide(grow(b), at, 1+i%3, false)
		require.Falsef(t, d.Allowed, "Slide(t%d, cost %d) = allowed, want denied", i, 1+i%3)
		assert.Equal(t, want, got)
	}
	d, _ := p.Decide(grow(b), t0+int64(5*time.Second), 2, false)
	assert.True(t, d.Allowed, "denials charged the window")
}

func TestSlideRaiseLimit(t *testing.T) {
	b := walkSlide(t, Slide{Limit: 2, Window: 10 * time.Second}, nil, []step{
		{0, 2, true, 0, 0, 10 * time.Second},
		{time.Second, 1, false, 0, 9 * time.Second, 9 * time.Second},
	})
	b = walkSlide(t, Slide{Limit: 4, Window: 10 * time.Second}, b, []step{
		{time.Second, 1, true, 1, 0, 10 * time.Second},
	})
	walkSlide(t, Slide{Limit: 1, Window: 10 * time.Second}, b, []step{
		{2 * time.Second, 1, false, 0, 9 * time.Second, 9 * time.Second},
		{11 * time.Second, 1, true, 0, 0, 10 * time.Second},
	})
}

func TestSlideChangeWindow(t *testing.T) {
	b := walkSlide(t, Slide{Limit: 2, Window: 10 * time.Second}, nil, []step{
		{0, 1, true, 1, 0, 10 * time.Second},
		{4 * time.Second, 1, true, 0, 0, 10 * time.Second},
		{5 * time.Second, 1, false, 0, 5 * time.Second, 9 * time.Second},
	})
	b = walkSlide(t, Slide{Limit: 2, Window: 3 * time.Second}, b, []step{
		{5 * time.Second, 1, true, 0, 0, 3 * time.Second}, // second 0 left the shorter window
	})
	walkSlide(t, Slide{Limit: 2, Window: 20 * time.Second}, b, []step{
		// second 0 was pruned under the 3 s window; seconds 4 and 5 count again.
		{6 * time.Second, 1, false, 0, 18 * time.Second, 19 * time.Second},
	})
}

// TestSlideCoarse: windows over an hour use ceil(window/3600)-second counters
// and count every counter that overlaps the last window seconds.
func TestSlideCoarse(t *testing.T) {
	for _, tc := range []struct {
		window   time.Duration
		width, n int64
	}{
		{time.Second, 1, 1},
		{time.Hour, 1, 3600},
		{time.Hour + time.Second, 2, 1801},
		{3604 * time.Second, 2, 1802},
		{2 * time.Hour, 2, 3600},
		{2*time.Hour + time.Second, 3, 2401},
		{24 * time.Hour, 24, 3600},
		{MaxWindow, 87600, 3600},
	} {
		width, n := Slide{Limit: 1, Window: tc.window}.Width()
		assert.Equalf(t, [2]int64{tc.width, tc.n}, [2]int64{width, n}, "Width() for window %v", tc.window)
	}
	// Base times below are multiples of 2 s, so counters start on even seconds.
	b := walkSlide(t, Slide{Limit: 2, Window: 3604 * time.Second}, nil, []step{
		{time.Second, 1, true, 1, 0, 3604 * time.Second}, // counter [0 s, 2 s) leaves at 3605 s
		{1500 * time.Millisecond, 1, true, 0, 0, 3603500 * time.Millisecond},
		// Seconds 1 … 3604 are 3604 consecutive seconds: nothing more fits.
		{3604 * time.Second, 1, false, 0, time.Second, time.Second},
		{3605 * time.Second, 2, true, 0, 0, 3604 * time.Second}, // counter [3604 s, 3606 s) leaves at 7209 s
		// A step back into the newest counter is not clamped; it counts [0 s, 2 s) again, so that must be kept.
		{3604 * time.Second, 1, false, 0, 3605 * time.Second, 3605 * time.Second},
	})
	assert.Equal(t, []uint64{slidePacking.pack(sec0, 2), slidePacking.pack(sec0+3604, 2)}, b)
}

func TestSlideCountAndExpiry(t *testing.T) {
	p := Slide{Limit: 5, Window: 10 * time.Second}
	assert.Zero(t, p.Expiry(nil))
	b := walkSlide(t, p, nil, []step{
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

func TestSlideValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Slide
		want error
	}{
		{Slide{Limit: 1, Window: time.Second}, nil},
		{Slide{Limit: math.MaxUint32, Window: MaxWindow}, nil},
		{Slide{Limit: 0, Window: time.Second}, ErrLimit},
		{Slide{Limit: -1, Window: time.Second}, ErrLimit},
		{Slide{Limit: math.MaxUint32 + 1, Window: time.Second}, ErrLimit},
		{Slide{Limit: 1, Window: 0}, ErrWindow},
		{Slide{Limit: 1, Window: -time.Second}, ErrWindow},
		{Slide{Limit: 1, Window: 1500 * time.Millisecond}, ErrWindow},
		{Slide{Limit: 1, Window: 999 * time.Millisecond}, ErrWindow},
		{Slide{Limit: 1, Window: MaxWindow + time.Second}, ErrWindow},
	} {
		assert.ErrorIsf(t, tc.p.Validate(), tc.want, "%+v.Validate()", tc.p)
		kp := Params{Kind: KindSlide, Limit: tc.p.Limit, Period: tc.p.Window}
		assert.Equal(t, tc.p.Validate(), kp.Validate())
	}
}

func TestParams(t *testing.T) {
	assert.ErrorIs(t, Params{Limit: 1, Period: time.Second}.Validate(), ErrKind)
	assert.ErrorIs(t, Params{Kind: 9, Limit: 1, Period: time.Second}.Validate(), ErrKind)
	for k, want := range map[Kind]string{KindNone: "none", KindSlide: "slide", KindToken: "token", 9: "none"} {
		assert.Equal(t, want, k.String())
	}
	p := Params{Kind: KindToken, Limit: 3, Rate: 2, Period: time.Second}
	assert.Equal(t, Token{Capacity: 3, Rate: 2, Period: time.Second}, p.Token())
	assert.Equal(t, Slide{Limit: 3, Window: time.Second}, p.Slide())
}

func TestCounter(t *testing.T) {
	c := slidePacking.pack(sec0, math.MaxUint32)
	assert.Equal(t, sec0, slidePacking.stamp(c))
	assert.Equal(t, int64(math.MaxUint32), slidePacking.count(c))
}
