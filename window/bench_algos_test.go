package window

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// BenchmarkFixedDecide offers twice the limit, so half the requests are
// denied, in windows aligned to the epoch and in windows started by their
// first hit side by side.
func BenchmarkFixedDecide(b *testing.B) {
	for _, first := range []bool{false, true} {
		b.Run(fmt.Sprint("firsthit=", first), func(b *testing.B) {
			p := Fixed{Limit: 100, Window: time.Second, FirstHit: first}
			var s State
			now := t0
			b.ReportAllocs()
			for b.Loop() {
				now += int64(5 * time.Millisecond)
				p.Decide(&s, now, 1, false)
			}
		})
	}
}

// BenchmarkLogDecide keeps a full log, one entry per millisecond: every request
// sums Limit entries, and every admission prunes the oldest and shifts the log.
func BenchmarkLogDecide(b *testing.B) {
	for _, limit := range []int64{100, MaxLogLimit} {
		b.Run(fmt.Sprint("limit=", limit), func(b *testing.B) {
			p := Log{Limit: limit, Window: time.Duration(limit) * time.Millisecond}
			log := make([]uint64, 0, limit+1)
			now := t0
			for range limit {
				now += msNs
				_, log = p.Decide(log, now, 1, false)
			}
			b.ReportAllocs()
			for b.Loop() {
				now += msNs / 2
				_, log = p.Decide(log, now, 1, false)
			}
		})
	}
}

// BenchmarkLeakyDecide offers twice the drain rate, so half the requests are denied.
func BenchmarkLeakyDecide(b *testing.B) {
	p := Leaky{Capacity: 100, Rate: 10, Period: time.Second}
	var s State
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now += int64(50 * time.Millisecond)
		p.Decide(&s, now, 1, false)
	}
}

// BenchmarkThrottleDecide is CL.THROTTLE at twice its rate: half limited.
func BenchmarkThrottleDecide(b *testing.B) {
	p := Throttle{MaxBurst: 99, Count: 10, Period: 1}
	var s State
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now += int64(50 * time.Millisecond)
		p.Decide(&s, now, 1)
	}
}

// TestAlgosAllocs holds Fixed, Log, Leaky and Throttle to zero allocations
// outside benchmarks too, admitted, denied and peeking.
func TestAlgosAllocs(t *testing.T) {
	fp := Fixed{Limit: 10, Window: time.Second}
	ffp := Fixed{Limit: 10, Window: time.Second, FirstHit: true}
	lp := Log{Limit: 100, Window: time.Second}
	kp := Leaky{Capacity: 10, Rate: 10, Period: time.Second}
	tp := Throttle{MaxBurst: 9, Count: 10, Period: 1}
	var fs, ffs, ks, ts State
	log := make([]uint64, 0, lp.Limit+1)
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now += int64(7 * time.Millisecond)
		fp.Decide(&fs, now, 1, false)
		fp.Decide(&fs, now, 1, true)
		ffp.Decide(&ffs, now, 1, false)
		ffp.Decide(&ffs, now, 1, true)
		_, log = lp.Decide(log, now, 1, false)
		lp.Decide(log, now, 1, true)
		kp.Decide(&ks, now, 1, false)
		kp.Decide(&ks, now, 1, true)
		tp.Decide(&ts, now, 1)
		tp.Decide(&ts, now, 0)
	})
	assert.Zerof(t, allocs, "allocations per Decide")
}
