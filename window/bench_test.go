package window

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// BenchmarkSlideDecide decides one request a second against a limit that is
// never reached, so the window is full of counters: the longest sum there is.
func BenchmarkSlideDecide(b *testing.B) {
	for _, win := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} {
		b.Run(fmt.Sprint("window=", win), func(b *testing.B) {
			p := Slide{Limit: math.MaxUint32, Window: win}
			counters := make([]uint64, 0, MaxCounters+2)
			now := t0
			b.ReportAllocs()
			for b.Loop() {
				now += sec
				_, counters = p.Decide(counters, now, 1, false)
			}
		})
	}
}

// BenchmarkTokenDecide offers twice the refill rate, so half the requests are denied.
func BenchmarkTokenDecide(b *testing.B) {
	p := Token{Capacity: 100, Rate: 10, Period: time.Second}
	var s State
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now += int64(50 * time.Millisecond)
		p.Decide(&s, now, 1, false)
	}
}

// TestDecideAllocs holds the hot paths to zero allocations outside benchmarks too.
func TestDecideAllocs(t *testing.T) {
	sp := Slide{Limit: 100, Window: 2 * time.Hour}
	counters := make([]uint64, 0, MaxCounters+2)
	tp := Token{Capacity: 100, Rate: 10, Period: time.Second}
	var s State
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now += int64(700 * time.Millisecond)
		_, counters = sp.Decide(counters, now, 1, false)
		sp.Decide(counters, now, 1, true)
		tp.Decide(&s, now, 1, false)
	})
	assert.Zerof(t, allocs, "allocations per Decide")
}
