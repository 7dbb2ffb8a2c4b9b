package window_test

import (
	"fmt"
	"time"

	"github.com/rlstore/rlstore/window"
)

// noon is the examples' clock: 2025-06-01 12:00:00 UTC.
var noon = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func ExampleFixed() {
	p := window.Fixed{Limit: 2, Window: time.Minute}
	var s window.State // one key's state; the zero State is an empty window
	for _, at := range []time.Duration{50 * time.Second, 55 * time.Second, 59 * time.Second, 60 * time.Second} {
		d := p.Decide(&s, noon.Add(at).UnixNano(), 1, false)
		fmt.Printf("%s allowed=%v remaining=%d wait=%v reset=%v\n", noon.Add(at).Format("15:04:05"), d.Allowed, d.Remaining, d.Wait, d.Reset)
	}
	// Output:
	// 12:00:50 allowed=true remaining=1 wait=0s reset=10s
	// 12:00:55 allowed=true remaining=0 wait=0s reset=5s
	// 12:00:59 allowed=false remaining=0 wait=1s reset=1s
	// 12:01:00 allowed=true remaining=1 wait=0s reset=1m0s
}

// A window starts at its first admission, 12:00:50, and ends a minute later.
func ExampleFixed_firstHit() {
	p := window.Fixed{Limit: 2, Window: time.Minute, FirstHit: true}
	var s window.State
	for _, at := range []time.Duration{50 * time.Second, 55 * time.Second, 60 * time.Second, 110 * time.Second} {
		d := p.Decide(&s, noon.Add(at).UnixNano(), 1, false)
		fmt.Printf("%s allowed=%v remaining=%d wait=%v reset=%v\n", noon.Add(at).Format("15:04:05"), d.Allowed, d.Remaining, d.Wait, d.Reset)
	}
	// Output:
	// 12:00:50 allowed=true remaining=1 wait=0s reset=1m0s
	// 12:00:55 allowed=true remaining=0 wait=0s reset=55s
	// 12:01:00 allowed=false remaining=0 wait=50s reset=50s
	// 12:01:50 allowed=true remaining=1 wait=0s reset=1m0s
}

func ExampleLog() {
	p := window.Log{Limit: 2, Window: time.Second}
	b := make([]uint64, 0, p.Limit+1) // the key's log, with room for one more entry
	for _, ms := range []time.Duration{0, 400, 900, 1000, 1400} {
		var d window.Decision
		d, b = p.Decide(b, noon.Add(ms*time.Millisecond).UnixNano(), 1, false)
		fmt.Printf("%4dms allowed=%v remaining=%d wait=%v reset=%v entries=%d\n", ms, d.Allowed, d.Remaining, d.Wait, d.Reset, len(b))
	}
	// Output:
	//    0ms allowed=true remaining=1 wait=0s reset=1s entries=1
	//  400ms allowed=true remaining=0 wait=0s reset=1s entries=2
	//  900ms allowed=false remaining=0 wait=100ms reset=500ms entries=2
	// 1000ms allowed=true remaining=0 wait=0s reset=1s entries=2
	// 1400ms allowed=true remaining=0 wait=0s reset=1s entries=2
}

func ExampleLeaky() {
	// A queue of 3 draining 2 per second shapes a burst of 4 into one request
	// every 500 ms, and refuses what does not fit.
	p := window.Leaky{Capacity: 3, Rate: 2, Period: time.Second}
	var s window.State // the zero State is an empty queue
	for range 4 {
		d := p.Decide(&s, noon.UnixNano(), 1, false)
		if d.Allowed {
			fmt.Printf("admitted: proceed in %v\n", d.Wait)
		} else {
			fmt.Printf("denied: retry in %v\n", d.Wait)
		}
	}
	// Output:
	// admitted: proceed in 0s
	// admitted: proceed in 500ms
	// admitted: proceed in 1s
	// denied: retry in 500ms
}

func ExampleThrottle() {
	// CL.THROTTLE user123 15 30 60: a burst of 16, then 30 per minute.
	p := window.Throttle{MaxBurst: 15, Count: 30, Period: 60}
	var s window.State // Token's state: RL.TOKEN may drive the same key
	show := func(r window.ThrottleReply, changed bool) {
		limited := 0
		if r.Limited {
			limited = 1
		}
		fmt.Printf("[%d, %d, %d, %d, %d] changed=%v\n", limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter, changed)
	}
	show(p.Decide(&s, noon.UnixNano(), 1))
	show(p.Decide(&s, noon.UnixNano(), 15))
	show(p.Decide(&s, noon.UnixNano(), 1))
	show(p.Decide(&s, noon.UnixNano(), 0))   // a peek
	show(p.Decide(&s, noon.UnixNano(), -10)) // a refund
	// Output:
	// [0, 16, 15, -1, 2] changed=true
	// [0, 16, 0, -1, 32] changed=true
	// [1, 16, 0, 2, 32] changed=false
	// [0, 16, 0, -1, 32] changed=false
	// [0, 16, 10, -1, 12] changed=true
}
