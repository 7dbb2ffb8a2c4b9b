package window

import (
	"math"
	"testing"
	"time"
)

// An algorithm fuzz program is three header bytes choosing the parameters,
// then three-byte operations, each one request:
//
//	[0] size of the clock step
//	[1] flags: bits 0-1 the step's unit (ns, µs, ms, s), bit 2 step back,
//	    bit 3 peek (Throttle: quantity 0), bit 4 change parameters (from
//	    bytes 2, 0, 1), bit 5 step to just before or onto the next whole
//	    millisecond, bit 6 Throttle: refund
//	[2] cost: mostly small; 250-254 near the limit, 255 over it
//	    (Throttle: 254 and 255 the extremes of int64)
//
// Every request runs the algorithm's trace checks: the brute-force model,
// the shared promises, and its invariants. Programs are cut at
// algoFuzzMaxOps so the clock stays far from int64's end.
const algoFuzzMaxOps = 2048

var algoFuzzUnits = [4]int64{1, int64(time.Microsecond), int64(time.Millisecond), int64(time.Second)}

// algoFuzzOp is one operation of an algorithm fuzz program.
type algoFuzzOp struct{ size, flags, cost byte }

func decodeAlgoFuzz(prog []byte) (a, b, c byte, ops []algoFuzzOp) {
	var h [3]byte
	n := copy(h[:], prog)
	for i := n; i+3 <= len(prog) && len(ops) < algoFuzzMaxOps; i += 3 {
		ops = append(ops, algoFuzzOp{prog[i], prog[i+1], prog[i+2]})
	}
	return h[0], h[1], h[2], ops
}

func (op algoFuzzOp) peek() bool    { return op.flags&8 != 0 }
func (op algoFuzzOp) reparam() bool { return op.flags&16 != 0 }

// next applies op's clock step to now.
func (op algoFuzzOp) next(now int64) int64 {
	const ms = int64(time.Millisecond)
	step := int64(op.size) * algoFuzzUnits[op.flags&3]
	switch {
	case op.flags&32 != 0:
		return now + ms - now%ms - int64(op.size%2)
	case op.flags&4 != 0:
		return now - step
	}
	return now + step
}

// costFor turns op's cost byte into a cost for limit.
func (op algoFuzzOp) costFor(limit int64) int64 {
	switch b := op.cost; {
	case b == 255:
		return limit + 1
	case b >= 250:
		return max(1, limit-int64(254-b))
	default:
		return 1 + int64(b)%min(limit, 64)
	}
}

// quantity turns op into a CL.THROTTLE quantity for limit.
func (op algoFuzzOp) quantity(limit int64) int64 {
	switch {
	case op.peek():
		return 0
	case op.flags&64 != 0 && op.cost == 255:
		return math.MinInt64
	case op.flags&64 != 0:
		return -op.costFor(limit)
	case op.cost == 254:
		return math.MaxInt64
	}
	return op.costFor(limit)
}

// algoFuzzWindows are the windows and periods a header may pick, scaled by 1-7.
var algoFuzzWindows = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 7 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 1500 * time.Millisecond, time.Minute, time.Hour, 24 * time.Hour, 30 * 24 * time.Hour, MaxWindow,
}

func algoFuzzWindow(b, c byte) time.Duration {
	return min(MaxWindow, algoFuzzWindows[int(b)%len(algoFuzzWindows)]*time.Duration(1+c%7))
}

func fuzzFixed(a, b, c byte) Fixed {
	p := Fixed{Limit: 1 + int64(a%32), Window: algoFuzzWindow(b, c), FirstHit: a/32%2 == 1}
	if a >= 252 {
		p.Limit = 1<<61 - int64(255-a)
	}
	return p
}

func fuzzLog(a, b, c byte) Log {
	p := Log{Limit: 1 + int64(a%32), Window: algoFuzzWindow(b, c)}
	if a >= 252 {
		p.Limit = MaxLogLimit - int64(255-a)
	}
	return p
}

// fuzzLeaky keeps Capacity small: the model holds every queued unit.
func fuzzLeaky(a, b, c byte) Leaky {
	periods := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour, MaxWindow}
	p := Leaky{Capacity: 1 + int64(a%40), Period: min(MaxWindow, periods[int(b)%len(periods)]*time.Duration(1+c%7))}
	p.Rate = 1 + int64(c)%min(int64(p.Period), 1000)
	if a >= 252 {
		p.Capacity = 200 + int64(a)
	}
	p.Capacity = min(p.Capacity, int64(maxTau)/p.Interval())
	return p
}

// fuzzThrottle keeps T whole in float64 and at least 1 µs, as the
// transcription of redis-cell requires.
func fuzzThrottle(a, b, c byte) Throttle {
	p := Throttle{MaxBurst: int64(a % 40), Count: 1 + int64(b), Period: 1 + int64(c%60)}
	switch {
	case a >= 252:
		p.MaxBurst = 10_000 + int64(a)
	case b >= 240:
		p.Count = 1_000_000 * p.Period / int64(1+b%4) // T of 1-4 µs
	}
	return p
}

func FuzzFixed(f *testing.F) {
	f.Add([]byte{3, 4, 2, 100, 2, 1, 100, 2, 1, 1, 3, 2, 1, 0, 5, 6, 2, 255, 0, 2, 0})
	f.Add([]byte{1, 3, 1, 200, 34, 1, 7, 6, 1, 0, 33, 0, 1, 0, 5, 100, 10, 1})       // 500 ms, back steps, peeks
	f.Add([]byte{4, 4, 0, 10, 2, 1, 9, 18, 250, 7, 3, 254, 40, 19, 1, 0, 2, 255})    // new params
	f.Add([]byte{255, 10, 6, 255, 3, 3, 0, 3, 254, 200, 7, 1, 255, 3, 255, 1, 2, 1}) // 2^61 over MaxWindow
	f.Fuzz(func(t *testing.T, prog []byte) {
		a, b, c, ops := decodeAlgoFuzz(prog)
		r := newFixedRun(t, fuzzFixed(a, b, c))
		now := t0
		for _, op := range ops {
			now = op.next(now)
			if op.reparam() {
				r.setParams(fuzzFixed(op.cost, op.size, op.flags))
			}
			r.step(now, op.costFor(r.x.p.Limit), op.peek())
		}
		r.check()
	})
}

func FuzzLog(f *testing.F) {
	f.Add([]byte{3, 4, 2, 100, 2, 1, 100, 2, 1, 1, 3, 2, 1, 0, 5, 6, 2, 255, 0, 2, 0})
	f.Add([]byte{2, 1, 0, 0, 0, 1, 200, 1, 1, 1, 33, 2, 0, 36, 0, 3, 2, 250})     // 2 ms, ms boundaries, back steps
	f.Add([]byte{4, 4, 0, 10, 2, 1, 9, 18, 250, 7, 3, 254, 40, 19, 1, 0, 2, 255}) // new params
	f.Add([]byte{255, 4, 3, 1, 2, 1, 1, 2, 2, 1, 2, 3, 0, 0, 254, 3, 3, 255})     // MaxLogLimit
	f.Fuzz(func(t *testing.T, prog []byte) {
		a, b, c, ops := decodeAlgoFuzz(prog)
		r := newLogRun(t, fuzzLog(a, b, c))
		now := t0
		for _, op := range ops {
			now = op.next(now)
			if op.reparam() {
				r.setParams(fuzzLog(op.cost, op.size, op.flags))
			}
			r.step(now, op.costFor(r.x.p.Limit), op.peek())
		}
		r.check()
	})
}

func FuzzLeaky(f *testing.F) {
	f.Add([]byte{3, 3, 0, 100, 2, 1, 100, 2, 1, 1, 3, 2, 1, 0, 5, 6, 2, 255, 0, 2, 0})
	f.Add([]byte{2, 3, 2, 1, 2, 1, 0, 2, 1, 200, 2, 1, 50, 6, 0, 0, 33, 1, 9, 8, 1}) // a third of a second, back steps, peeks
	f.Add([]byte{4, 3, 0, 10, 2, 3, 9, 18, 250, 7, 3, 254, 40, 19, 1, 0, 2, 255})    // new params
	f.Add([]byte{255, 0, 0, 0, 0, 254, 1, 0, 200, 0, 0, 255, 10, 1, 100})            // 455 units of 1 ns
	f.Fuzz(func(t *testing.T, prog []byte) {
		a, b, c, ops := decodeAlgoFuzz(prog)
		r := newLeakyRun(t, fuzzLeaky(a, b, c))
		now := t0
		for _, op := range ops {
			now = op.next(now)
			if op.reparam() {
				r.setParams(fuzzLeaky(op.cost, op.size, op.flags))
			}
			r.step(now, op.costFor(r.x.p.Capacity), op.peek())
		}
		r.check()
	})
}

func FuzzThrottle(f *testing.F) {
	f.Add([]byte{15, 29, 0, 0, 3, 1, 1, 3, 1, 0, 8, 0, 2, 3, 250, 1, 3, 255})    // the README's 15 30 60
	f.Add([]byte{4, 0, 0, 0, 0, 6, 1, 3, 1, 100, 2, 1, 5, 6, 2, 0, 8, 0})        // redis-cell's 4 per 1 s
	f.Add([]byte{4, 0, 0, 3, 3, 3, 1, 66, 1, 2, 67, 255, 0, 64, 255, 1, 3, 254}) // refunds, extremes
	f.Add([]byte{3, 250, 0, 10, 2, 1, 9, 18, 250, 7, 3, 254, 40, 19, 1, 0, 2, 255})
	f.Fuzz(func(t *testing.T, prog []byte) {
		a, b, c, ops := decodeAlgoFuzz(prog)
		r := newThrottleRun(t, fuzzThrottle(a, b, c))
		now := t0
		for _, op := range ops {
			now = op.next(now)
			if op.reparam() {
				r.setParams(fuzzThrottle(op.cost, op.size, op.flags))
			}
			r.step(now, op.quantity(r.p.MaxBurst+1))
		}
	})
}
