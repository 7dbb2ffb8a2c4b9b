package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var adjustParams = []Params{
	{Kind: KindToken, Limit: 10, Rate: 1, Period: time.Second},
	{Kind: KindFixed, Limit: 10, Period: time.Minute},
	{Kind: KindFixed, Limit: 10, Period: time.Minute, FirstHit: true},
	{Kind: KindSlide, Limit: 10, Period: time.Minute},
}

// TestAdjustGivesBack: a refund right after a charge gives back exactly
// what the charge took, and never more than full.
func TestAdjustGivesBack(t *testing.T) {
	for _, p := range adjustParams {
		t.Run(fmt.Sprint(p.Kind, p.FirstHit), func(t *testing.T) {
			var s State
			b := make([]uint64, 0, 8)
			d, b := p.Decide(&s, b, t0, 4, false)
			require.True(t, d.Allowed)
			assert.EqualValues(t, 6, p.afterPeek(&s, b, t0))
			b, ok := p.Adjust(&s, b, t0, -3)
			assert.True(t, ok)
			assert.EqualValues(t, 9, p.afterPeek(&s, b, t0), "Adjust(-3) after a charge of 4")
			b, _ = p.Adjust(&s, b, t0, -100)
			assert.EqualValues(t, 10, p.afterPeek(&s, b, t0), "a refund stops at full")
			b, ok = p.Adjust(&s, b, t0, -1)
			assert.False(t, ok, "a refund of a full key changes nothing")
			b, ok = p.Adjust(&s, b, t0, 25)
			assert.True(t, ok)
			d, _ = p.Decide(&s, b, t0, 1, true)
			assert.False(t, d.Allowed, "a charge past the limit: the next request waits")
			assert.Positive(t, d.Wait)
			if p.Kind != KindToken {
				assert.EqualValues(t, 20, p.Count(s, b, t0), "the debt stops at one limit past")
			}
		})
	}
	_, ok := Params{Kind: KindLeaky, Limit: 5, Rate: 1, Period: time.Second}.Adjust(&State{}, nil, t0, -1)
	assert.False(t, ok, "a Leaky is not adjustable")
}

// TestLogRefund: a Log gives back its newest units, dropping the entries
// it empties, never below empty and never outside the window, and takes no
// charge.
func TestLogRefund(t *testing.T) {
	p := Params{Kind: KindLog, Limit: 5, Period: 10 * time.Second}
	require.False(t, KindLog.Adjustable())
	require.True(t, KindLog.Refundable())
	var s State
	b := make([]uint64, 0, 8)
	ms := int64(time.Millisecond)
	for i, cost := range []int64{1, 2, 1} { // 4 units at t0, t0+1ms, t0+2ms
		var d Decision
		d, b = p.Decide(&s, b, t0+int64(i)*ms, cost, false)
		require.True(t, d.Allowed)
	}
	now := t0 + 3*ms
	b, ok := p.Adjust(&s, b, now, -2)
	assert.True(t, ok)
	assert.EqualValues(t, 2, p.Count(s, b, now), "Adjust(-2) after 4")
	assert.Len(t, b, 2, "the t0+2ms entry emptied, the t0+1ms one has 1 left")
	assert.Equal(t, t0+ms+int64(10*time.Second), p.Expiry(s, b), "the newest unit left is at t0+1ms")
	b, ok = p.Adjust(&s, b, now, 25)
	assert.False(t, ok, "a Log takes no charge")
	assert.EqualValues(t, 2, p.Count(s, b, now))
	b, ok = p.Adjust(&s, b, now, -100)
	assert.True(t, ok)
	assert.Empty(t, b, "a refund stops at empty")
	assert.Zero(t, p.Expiry(s, b), "an empty log restricts nothing")
	_, ok = p.Adjust(&s, b, now, -1)
	assert.False(t, ok)

	b = b[:0]
	_, b = p.Decide(&s, b, t0, 3, false)
	later := t0 + int64(10*time.Second) // the entry has left the window
	b, ok = p.Adjust(&s, b, later, -1)
	assert.False(t, ok, "nothing in the window to give back")
	assert.Len(t, b, 1)
}

// TestLogRefundTraces mixes Log decisions and refunds with a clock that
// sometimes steps back: the state stays one CheckState accepts and the
// count stays between empty and the limit.
func TestLogRefundTraces(t *testing.T) {
	p := Params{Kind: KindLog, Limit: 20, Period: 3 * time.Second}
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var s State
		b := make([]uint64, 0, 64)
		now := t0
		for range 3000 {
			now += rng.Int64N(int64(300*time.Millisecond)) - int64(30*time.Millisecond)
			if rng.IntN(3) > 0 {
				_, b = p.Decide(&s, b, now, 1+rng.Int64N(4), false)
			} else {
				b, _ = p.Adjust(&s, b, now, -1-rng.Int64N(6))
			}
			require.NoError(t, p.CheckState(s, b), "seed %d", seed)
			c := p.Count(s, b, now)
			require.True(t, c >= 0 && c <= p.Limit, "seed %d: count %d", seed, c)
		}
	}
}

// afterPeek returns the units a request could take now.
func (p Params) afterPeek(s *State, b []uint64, now int64) int64 {
	d, _ := p.Decide(s, b, now, 1, true)
	if !d.Allowed {
		return d.Remaining
	}
	return d.Remaining + 1
}

// TestAdjustTraces mixes decisions, charges and refunds with a clock that
// sometimes steps back: the state stays one CheckState accepts, a key is
// never fuller than full nor more than one limit past empty, and the
// decisions keep their promises.
func TestAdjustTraces(t *testing.T) {
	for _, p := range adjustParams {
		for seed := range uint64(10) {
			t.Run(fmt.Sprint(p.Kind, p.FirstHit, "/", seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				var s State
				b := make([]uint64, 0, 64)
				now := t0
				for range 3000 {
					now += rng.Int64N(int64(3*time.Second)) - int64(300*time.Millisecond)
					switch rng.IntN(3) {
					case 0:
						b = b[:len(b):max(cap(b), len(b)+1)]
						_, b = p.Decide(&s, b, now, 1+rng.Int64N(4), false)
					case 1:
						b, _ = p.Adjust(&s, b, now, 1+rng.Int64N(15))
					default:
						b, _ = p.Adjust(&s, b, now, -1-rng.Int64N(15))
					}
					require.NoError(t, p.CheckState(s, b))
					d, _ := p.Decide(&s, b, now, 1, true)
					require.LessOrEqual(t, d.Remaining, p.Limit)
					switch p.Kind {
					case KindToken:
						require.LessOrEqual(t, int64(s[0])-max(now, int64(s[1])), 2*p.Token().tau())
					default:
						require.LessOrEqual(t, p.Count(s, b, now), 2*p.Limit)
						require.GreaterOrEqual(t, p.Count(s, b, now), int64(0))
					}
					if cap(b)-len(b) < 2 {
						b = append(make([]uint64, 0, 2*cap(b)+2), b...)
					}
				}
			})
		}
	}
}

func BenchmarkAdjust(b *testing.B) {
	for _, p := range adjustParams {
		b.Run(p.Kind.String(), func(b *testing.B) {
			var s State
			buf := make([]uint64, 0, 8)
			now := t0
			b.ReportAllocs()
			for b.Loop() {
				now += int64(time.Millisecond)
				buf, _ = p.Adjust(&s, buf, now, 3)
				buf, _ = p.Adjust(&s, buf, now, -3)
			}
		})
	}
}
