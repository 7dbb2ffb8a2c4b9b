package window

import (
	"testing"
	"time"
)

// A fuzz program is three header bytes choosing the parameters, then
// four-byte operations:
//
//	[0] size of the clock step
//	[1] flags: bits 0-1 the step's unit (ns, ms, s, h), bit 2 step back,
//	    bit 3 peek, bit 4 change parameters (from bytes 3, 0, 2),
//	    bit 5 step to just before or onto the next whole second
//	[2] cost: mostly small; 250-254 near the limit, 255 over it
//	[3] with bit 4, the new parameters' first byte
//
// Programs are cut at maxOps so the clock stays well before 2106.
const maxOps = 1024

var stepUnits = [4]int64{1, int64(time.Millisecond), sec, int64(time.Hour)}

// fuzzOp is one operation of a fuzz program.
type fuzzOp struct{ size, flags, cost, extra byte }

func decodeOps(prog []byte) []fuzzOp {
	ops := make([]fuzzOp, 0, min(len(prog)/4, maxOps))
	for i := 0; i+4 <= len(prog) && len(ops) < maxOps; i += 4 {
		ops = append(ops, fuzzOp{prog[i], prog[i+1], prog[i+2], prog[i+3]})
	}
	return ops
}

func (op fuzzOp) peek() bool    { return op.flags&8 != 0 }
func (op fuzzOp) reparam() bool { return op.flags&16 != 0 }

// next applies op's clock step to now.
func (op fuzzOp) next(now int64) int64 {
	step := int64(op.size) * stepUnits[op.flags&3]
	switch {
	case op.flags&32 != 0:
		return now + sec - now%sec - int64(op.size%2)
	case op.flags&4 != 0:
		return now - step
	}
	return now + step
}

// fuzzCost turns a cost byte into a cost for limit.
func fuzzCost(b byte, limit int64) int64 {
	switch {
	case b == 255:
		return limit + 1
	case b >= 250:
		return max(1, limit-int64(254-b))
	}
	return 1 + int64(b)%min(limit, 64)
}

// fuzzWindows are the windows a header may pick besides short ones: either
// side of the switch to coarse counters, and the extremes.
var fuzzWindows = []int64{3599, 3600, 3601, 3602, 3603, 3604, 7199, 7200, 7201, 10799, 86400, 86401, 30 * 86400, int64(MaxWindow / time.Second)}

func fuzzSlide(a, b, c byte) Slide {
	limit := 1 + int64(a%32)
	if a >= 252 {
		limit = 1<<32 - int64(256-int(a)) // up to MaxUint32
	}
	win := 1 + int64(c%120)
	if b >= 128 {
		win = fuzzWindows[int(c)%len(fuzzWindows)]
	}
	return Slide{Limit: limit, Window: time.Duration(win) * time.Second}
}

var fuzzPeriods = []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour, 30 * 24 * time.Hour, MaxWindow}

func fuzzToken(a, b, c byte) Token {
	p := Token{Capacity: 1 + int64(a%40), Period: fuzzPeriods[int(b)%len(fuzzPeriods)] * time.Duration(1+c%7)}
	p.Period = min(p.Period, MaxWindow)
	p.Rate = 1 + int64(c)%min(int64(p.Period), 1000)
	maxCap := int64(maxTau) / p.Interval()
	if p.Capacity = min(p.Capacity, maxCap); a >= 252 {
		p.Capacity = maxCap
	}
	return p
}

func header(prog []byte) (a, b, c byte, ops []byte) {
	var h [3]byte
	n := copy(h[:], prog)
	return h[0], h[1], h[2], prog[n:]
}

func FuzzSlide(f *testing.F) {
	f.Add([]byte{3, 0, 9, 100, 0, 1, 100, 0, 1, 1, 200, 2, 1, 0, 5, 6, 0, 255, 0, 0, 0})
	f.Add([]byte{1, 200, 5, 1, 2, 0, 0, 0, 2, 1, 0, 255, 35, 0, 0, 200, 33, 0, 0, 0, 6, 0, 0}) // 3604 s, second boundaries
	f.Add([]byte{4, 0, 2, 10, 2, 1, 0, 5, 6, 1, 0, 1, 10, 1, 0, 0, 18, 250, 7, 1, 2, 254, 0})  // back steps, new params
	f.Add([]byte{255, 200, 13, 255, 3, 3, 0, 200, 3, 254, 0, 1, 8, 255, 0})                    // MaxUint32 over MaxWindow
	f.Fuzz(func(t *testing.T, prog []byte) {
		a, b, c, body := header(prog)
		r := newSlideRun(t, fuzzSlide(a, b, c))
		now := t0
		for _, op := range decodeOps(body) {
			now = op.next(now)
			if op.reparam() {
				r.setParams(fuzzSlide(op.extra, op.size, op.cost))
			}
			r.step(now, fuzzCost(op.cost, r.p.Limit), op.peek())
		}
		r.checkBusiest()
	})
}

func FuzzToken(f *testing.F) {
	f.Add([]byte{3, 3, 0, 100, 0, 1, 100, 0, 1, 1, 200, 2, 1, 0, 5, 6, 0, 255, 0, 0, 0})
	f.Add([]byte{2, 3, 2, 1, 1, 0, 0, 50, 1, 0, 0, 200, 5, 0, 0, 0, 33, 1, 0})                 // a third of a second, back steps
	f.Add([]byte{4, 3, 0, 10, 2, 3, 0, 5, 6, 1, 0, 1, 16, 1, 40, 0, 18, 250, 7, 1, 2, 254, 0}) // new params
	f.Add([]byte{255, 8, 0, 0, 0, 254, 0, 255, 3, 254, 0, 0, 0, 255, 0})                       // a 100-year tolerance
	f.Fuzz(func(t *testing.T, prog []byte) {
		a, b, c, body := header(prog)
		r := newTokenRun(t, fuzzToken(a, b, c))
		now := t0
		for _, op := range decodeOps(body) {
			now = op.next(now)
			if op.reparam() {
				r.setParams(fuzzToken(op.extra, op.size, op.cost))
			}
			r.step(now, fuzzCost(op.cost, r.p.Capacity), op.peek())
		}
	})
}
