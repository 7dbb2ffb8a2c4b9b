package window

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everyKind has valid parameters of every algorithm.
var everyKind = []Params{
	{Kind: KindSlide, Limit: 5, Period: 3 * time.Second},
	{Kind: KindToken, Limit: 5, Rate: 2, Period: time.Second},
	{Kind: KindFixed, Limit: 5, Period: 1500 * time.Millisecond},
	{Kind: KindLog, Limit: 5, Period: 2 * time.Second},
	{Kind: KindLeaky, Limit: 5, Rate: 2, Period: time.Second},
}

// TestParamsDispatch checks that Params's methods run each kind's own
// algorithm, over the state that kind keeps, and that the state they make
// passes CheckState.
func TestParamsDispatch(t *testing.T) {
	require.Len(t, everyKind, int(KindLeaky), "a new kind needs a case here")
	for _, p := range everyKind {
		t.Run(p.Kind.String(), func(t *testing.T) {
			require.NoError(t, p.Validate())
			var s, ref State
			var b, refB []uint64
			for i := range int64(40) {
				now := t0 + i*int64(170*time.Millisecond)
				cost, peek := 1+i%3, i%5 == 0
				d, nb := p.Decide(&s, slices.Grow(b, 1), now, cost, peek)
				want := decideDirect(p, &ref, &refB, now, cost, peek)
				require.Equalf(t, want, d, "Decide at step %d", i)
				if p.Kind.Counters() {
					b = nb
				} else {
					assert.Nil(t, nb)
				}
				assert.Equal(t, expiryDirect(p, ref, refB), p.Expiry(s, b))
				assert.Equal(t, countDirect(p, ref, refB, now), p.Count(s, b, now))
				assert.NoError(t, p.CheckState(s, b))
			}
		})
	}
}

func decideDirect(p Params, s *State, b *[]uint64, now, cost int64, peek bool) Decision {
	var d Decision
	switch p.Kind {
	case KindSlide:
		d, *b = p.Slide().Decide(slices.Grow(*b, 1), now, cost, peek)
	case KindLog:
		d, *b = p.Log().Decide(slices.Grow(*b, 1), now, cost, peek)
	case KindToken:
		d = p.Token().Decide(s, now, cost, peek)
	case KindFixed:
		d = p.Fixed().Decide(s, now, cost, peek)
	case KindLeaky:
		d = p.Leaky().Decide(s, now, cost, peek)
	}
	return d
}

func expiryDirect(p Params, s State, b []uint64) int64 {
	switch p.Kind {
	case KindSlide:
		return p.Slide().Expiry(b)
	case KindLog:
		return p.Log().Expiry(b)
	case KindToken:
		return p.Token().Expiry(s)
	case KindFixed:
		return p.Fixed().Expiry(s)
	}
	return p.Leaky().Expiry(s)
}

func countDirect(p Params, s State, b []uint64, now int64) int64 {
	switch p.Kind {
	case KindSlide:
		return p.Slide().Count(b, now)
	case KindLog:
		return p.Log().Count(b, now)
	case KindToken:
		return p.Token().Tokens(s, now)
	case KindFixed:
		return p.Fixed().Count(s, now)
	}
	return p.Leaky().Queued(s, now)
}

func TestCheckStateRejectsWhatDecideNeverMakes(t *testing.T) {
	slide, log, token := everyKind[0], everyKind[3], everyKind[1]
	for _, tc := range []struct {
		p Params
		s State
		b []uint64
	}{
		{slide, State{}, []uint64{slidePacking.pack(5, 1), slidePacking.pack(4, 1)}}, // unsorted
		{slide, State{}, []uint64{slidePacking.pack(5, 0)}},                          // empty counter
		{slide, State{1}, nil}, // a State where counters belong
		{log, State{}, []uint64{logPacking.pack(7, 1), logPacking.pack(7, 2)}}, // one millisecond twice
		{log, State{}, []uint64{^uint64(0)}},
		{log, State{}, make([]uint64, MaxLogLimit+2)},
		{token, State{}, []uint64{slidePacking.pack(1, 1)}}, // counters where a State belongs
	} {
		assert.ErrorIsf(t, tc.p.CheckState(tc.s, tc.b), ErrState, "%v %v %v", tc.p.Kind, tc.s, tc.b)
	}
}

func TestLeakyValidatesAsItsBucket(t *testing.T) {
	for _, l := range []Leaky{{1, 1, time.Second}, {0, 1, time.Second}, {1, 0, time.Second}, {1, 1, 0},
		{1, 2, time.Nanosecond}, {1 << 62, 1, time.Second}, {1, 1, MaxWindow + 1}} {
		assert.Equal(t, l.bucket().Validate(), l.Validate(), "%+v", l)
	}
}

func TestKindCounter(t *testing.T) {
	for _, k := range []Kind{KindSlide, KindLog} {
		c, ok := k.Counter(1234, 7)
		require.True(t, ok, k)
		at, n := k.SplitCounter(c)
		assert.Equal(t, [2]int64{1234, 7}, [2]int64{at, n}, k)
		for _, bad := range [][2]int64{{-1, 1}, {1, 0}, {1, -1}, {1 << 60, 1}} {
			_, ok := k.Counter(bad[0], bad[1])
			assert.False(t, ok, "%v %v", k, bad)
		}
	}
	_, ok := KindSlide.Counter(1, 1<<32)
	assert.False(t, ok, "a Slide count has 32 bits")
	_, ok = KindLog.Counter(1, 1<<20)
	assert.False(t, ok, "a Log count has 20 bits")
	assert.Equal(t, time.Second, KindSlide.Unit())
	assert.Equal(t, time.Millisecond, KindLog.Unit())
}
