package window_test

import (
	"fmt"
	"time"

	"github.com/rlstore/rlstore/window"
)

func ExampleSlide() {
	p := window.Slide{Limit: 2, Window: 10 * time.Second}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	counters := make([]uint64, 0, 4) // Decide needs room for one more counter
	for _, at := range []time.Duration{0, 3 * time.Second, 4 * time.Second, 10 * time.Second} {
		var d window.Decision
		d, counters = p.Decide(counters, start+int64(at), 1, false)
		fmt.Printf("at %v: allowed=%t remaining=%d wait=%v reset=%v\n", at, d.Allowed, d.Remaining, d.Wait, d.Reset)
	}
	// Output:
	// at 0s: allowed=true remaining=1 wait=0s reset=10s
	// at 3s: allowed=true remaining=0 wait=0s reset=10s
	// at 4s: allowed=false remaining=0 wait=6s reset=9s
	// at 10s: allowed=true remaining=0 wait=0s reset=10s
}

func ExampleToken() {
	p := window.Token{Capacity: 3, Rate: 1, Period: time.Second} // bursts of 3, then 1 a second
	var s window.State                                           // the zero State is a full bucket
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, at := range []time.Duration{0, 0, 0, 0, 500 * time.Millisecond, time.Second} {
		d := p.Decide(&s, start+int64(at), 1, false)
		fmt.Printf("at %v: allowed=%t remaining=%d wait=%v reset=%v\n", at, d.Allowed, d.Remaining, d.Wait, d.Reset)
	}
	// Output:
	// at 0s: allowed=true remaining=2 wait=0s reset=1s
	// at 0s: allowed=true remaining=1 wait=0s reset=2s
	// at 0s: allowed=true remaining=0 wait=0s reset=3s
	// at 0s: allowed=false remaining=0 wait=1s reset=3s
	// at 500ms: allowed=false remaining=0 wait=500ms reset=2.5s
	// at 1s: allowed=true remaining=0 wait=0s reset=3s
}
