package window

import (
	"math"
	"time"
)

// Kind names an algorithm. The values are stored on disk: append only.
type Kind uint8

// The algorithms. KindNone marks a free slot.
const (
	KindNone    Kind = 0
	KindSlide   Kind = 1
	KindToken   Kind = 2 // GCRA; shared by RL.TOKEN and CL.THROTTLE
	KindFixed   Kind = 3
	KindLog     Kind = 4
	KindLeaky   Kind = 5
	KindLease   Kind = 6 // RL.ACQUIRE's leases: a concurrency limit, not a rate
	KindReserve Kind = 7 // a key's outstanding RL.RESERVE reservations, under a hidden key
)

// String returns the name TYPE replies with; its upper case after "RL." is
// the algorithm's command.
func (k Kind) String() string {
	switch k {
	case KindSlide:
		return "slide"
	case KindToken:
		return "token"
	case KindFixed:
		return "fixed"
	case KindLog:
		return "log"
	case KindLeaky:
		return "leaky"
	case KindLease:
		return "lease"
	case KindReserve:
		return "reservations"
	}
	return "none"
}

// Native reports whether kind k decides requests through Params.Decide, so
// that it has an RL.<KIND> command and may be a policy's rule. A Lease is
// taken and given back by its own commands instead.
func (k Kind) Native() bool { return k >= KindSlide && k <= KindLeaky }

// Stamped reports whether kind k's counters are Counter words (a stamp
// above a count), ascending, that only ever grow at their end and shrink
// at their front, as a store's deltas and codecs may assume. A Lease's
// words are pairs in the order their leases end, which a renewal changes.
func (k Kind) Stamped() bool { return k == KindSlide || k == KindLog }

// Counters reports whether keys of kind k keep a []uint64 of counters (Slide)
// or log entries (Log) that grows and shrinks, rather than a fixed-size State.
// A store keeps them for it; none is ever 0 or all ones, so a store may use
// those words as markers.
func (k Kind) Counters() bool {
	return k == KindSlide || k == KindLog || k == KindLease || k == KindReserve
}

// Rated reports whether kind k takes a capacity, a rate and a period
// (Token, Leaky), rather than a limit and a window.
func (k Kind) Rated() bool { return k == KindToken || k == KindLeaky }

// CountName names what Params.Count counts for kind k: "count" (units in the
// window), "tokens" (left in the bucket) or "queued" (units in the queue).
func (k Kind) CountName() string {
	switch k {
	case KindToken:
		return "tokens"
	case KindLeaky:
		return "queued"
	case KindLease:
		return "in_flight"
	case KindReserve:
		return "reserved"
	}
	return "count"
}

// State is the fixed-size, pointer-free part of one key's state.
// Its meaning depends on the key's Kind.
type State [2]uint64

// Params is the union of every algorithm's parameters, small enough to pass by value
// and comparable, so a store can intern it. Its methods dispatch on Kind, so that
// a store runs any algorithm without knowing which: they are the one place that
// names every kind.
type Params struct {
	Kind   Kind
	Limit  int64         // limit (Slide, Fixed, Log) or capacity (Token, Leaky)
	Rate   int64         // units per Period (Token, Leaky); unused by the others
	Period time.Duration // window (Slide, Fixed, Log) or refill/drain period (Token, Leaky)
	// FirstHit (Fixed only) starts each window at its first admission
	// instead of at a multiple of Period since the Unix epoch.
	FirstHit bool
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Slide returns p as Slide parameters.
func (p Params) Slide() Slide { return Slide{Limit: p.Limit, Window: p.Period} }

// Token returns p as Token parameters.
func (p Params) Token() Token { return Token{Capacity: p.Limit, Rate: p.Rate, Period: p.Period} }

// Fixed returns p as Fixed parameters.
func (p Params) Fixed() Fixed { return Fixed{Limit: p.Limit, Window: p.Period, FirstHit: p.FirstHit} }

// Log returns p as Log parameters.
func (p Params) Log() Log { return Log{Limit: p.Limit, Window: p.Period} }

// Lease returns p as Lease parameters.
func (p Params) Lease() Lease { return Lease{Limit: p.Limit} }

// Leaky returns p as Leaky parameters.
func (p Params) Leaky() Leaky { return Leaky{Capacity: p.Limit, Rate: p.Rate, Period: p.Period} }

// Validate reports whether p names an algorithm and its parameters can be honoured.
func (p Params) Validate() error {
	if p.FirstHit && p.Kind != KindFixed {
		return ErrKind
	}
	switch p.Kind {
	case KindSlide:
		return p.Slide().Validate()
	case KindToken:
		return p.Token().Validate()
	case KindFixed:
		return p.Fixed().Validate()
	case KindLog:
		return p.Log().Validate()
	case KindLeaky:
		return p.Leaky().Validate()
	case KindLease:
		if p.Rate != 0 || p.Period != 0 {
			return ErrKind
		}
		return p.Lease().Validate()
	case KindReserve:
		if p.Limit < 0 || p.Limit > ledgerWide|ledgerCancels || p.Rate != 0 || p.Period != 0 {
			return ErrKind
		}
		return nil
	}
	return ErrKind
}

// Decide decides a request of cost units at now (unix nanoseconds) under
// valid parameters p, on one key's state: s if p.Kind keeps a State, else
// its counters b, which must have room for one more (cap(b) > len(b)). It
// returns the counters to keep, nil for a State kind. Unless the request is
// denied or peek is set, it charges the state. Denied requests never consume.
func (p Params) Decide(s *State, b []uint64, now, cost int64, peek bool) (Decision, []uint64) {
	switch p.Kind {
	case KindSlide:
		return p.Slide().Decide(b, now, cost, peek)
	case KindLog:
		return p.Log().Decide(b, now, cost, peek)
	case KindToken:
		return p.Token().Decide(s, now, cost, peek), nil
	case KindFixed:
		return p.Fixed().Decide(s, now, cost, peek), nil
	case KindLeaky:
		return p.Leaky().Decide(s, now, cost, peek), nil
	case KindLease: // no lease without an id: says whether cost would fit, as a peek
		return p.leaseDecide(b, now, cost), b
	case KindReserve: // a ledger admits nothing by itself
		return Decision{Wait: Never}, b
	}
	panic("window: Decide with unvalidated params") // Validate rejects every other kind
}

// Expiry returns the unix time in nanoseconds at which the state (s or b, as
// for Decide) no longer restricts anything, or 0 if it never did.
func (p Params) Expiry(s State, b []uint64) int64 {
	switch p.Kind {
	case KindSlide:
		return p.Slide().Expiry(b)
	case KindLog:
		return p.Log().Expiry(b)
	case KindToken:
		return p.Token().Expiry(s)
	case KindFixed:
		return p.Fixed().Expiry(s)
	case KindLeaky:
		return p.Leaky().Expiry(s)
	case KindLease:
		return p.Lease().Expiry(b)
	case KindReserve:
		return Reservations{}.expiry(p, b)
	}
	return 0
}

// Count returns what Kind.CountName names at now, without changing the state.
func (p Params) Count(s State, b []uint64, now int64) int64 {
	switch p.Kind {
	case KindSlide:
		return p.Slide().Count(b, now)
	case KindLog:
		return p.Log().Count(b, now)
	case KindToken:
		return p.Token().Tokens(s, now)
	case KindFixed:
		return p.Fixed().Count(s, now)
	case KindLeaky:
		return p.Leaky().Queued(s, now)
	case KindLease:
		return p.Lease().InFlight(b, now)
	case KindReserve:
		return p.Ledger().outstanding(b, now)
	}
	return 0
}

// CheckState reports whether s and b could be the state of a key under p's
// kind: what a store checks before it loads state that Decide did not make,
// from a snapshot or a log. It returns ErrState if not.
func (p Params) CheckState(s State, b []uint64) error {
	switch {
	case !p.Kind.Counters():
		if len(b) != 0 {
			return ErrState
		}
		return nil
	case s != State{}:
		return ErrState
	case p.Kind == KindLog:
		return checkLog(b)
	case p.Kind == KindLease:
		return checkLease(b)
	case p.Kind == KindReserve:
		return p.Ledger().check(b)
	}
	return checkSlide(b)
}

// leaseDecide is Decide for a Lease: what an acquire of cost would get at
// now, changing nothing.
func (p Params) leaseDecide(b []uint64, now, cost int64) Decision {
	l := p.Lease()
	now = max(now, 0)
	live := b[2*leaseFirstLive(b, now):]
	sum := leaseSum(live)
	d := Decision{Limit: l.Limit, Remaining: max(0, l.Limit-sum), Reset: time.Duration(max(0, l.Expiry(live)-now))}
	if cost <= l.Limit-sum && len(live) < 2*MaxLeases {
		d.Allowed, d.Remaining = true, l.Limit-sum-cost
		return d
	}
	d.Wait = l.waitToFit(live, sum, cost, now)
	return d
}

// checkSlide reports whether b could be a Slide key's counters: ascending
// seconds, each with at least one unit.
func checkSlide(b []uint64) error {
	prev := int64(-1)
	for _, c := range b {
		sec, n := slidePacking.stamp(c), slidePacking.count(c)
		if sec <= prev || n < 1 || sec > math.MaxUint32 {
			return ErrState
		}
		prev = sec
	}
	return nil
}

// checkLog reports whether b could be a Log key's entries: ascending
// milliseconds, each with at least one unit, and no more than a log keeps.
func checkLog(b []uint64) error {
	if len(b) > MaxLogLimit+1 {
		return ErrState
	}
	prev := int64(-1)
	for _, e := range b {
		ms, n := logPacking.stamp(e), logPacking.count(e)
		if ms <= prev || n < 1 || n > MaxLogLimit || e == ^uint64(0) {
			return ErrState
		}
		prev = ms
	}
	return nil
}
