package window

import (
	"errors"
	"time"
)

// Never is the Wait of a request that can never be admitted (its cost exceeds the limit).
const Never time.Duration = -1

// Decision is the outcome of one request. Being limited is a result, not an error.
type Decision struct {
	Allowed   bool
	Limit     int64         // the limit or capacity in force
	Remaining int64         // units a request could still take now (after this one, if admitted)
	Wait      time.Duration // denied: time until the same request fits, or Never; admitted: 0 (Leaky: its delay)
	Reset     time.Duration // time until the key is back to its full limit
}

// Sentinel errors for parameters that no algorithm can honour.
var (
	ErrLimit  = errors.New("window: limit out of range")
	ErrWindow = errors.New("window: window out of range")
	ErrRate   = errors.New("window: rate out of range")
	ErrCost   = errors.New("window: cost out of range")
	ErrKind   = errors.New("window: unknown algorithm")
)

// Kind names an algorithm. The values are stored on disk: append only.
type Kind uint8

// The algorithms. KindNone marks a free slot.
const (
	KindNone  Kind = 0
	KindSlide Kind = 1
	KindToken Kind = 2 // GCRA; shared by RL.TOKEN and CL.THROTTLE
	KindFixed Kind = 3
	KindLog   Kind = 4
	KindLeaky Kind = 5
)

// String returns the name TYPE replies with.
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
	}
	return "none"
}

// State is the fixed-size, pointer-free part of one key's state.
// Its meaning depends on the key's Kind.
type State [2]uint64

// Params is the union of every algorithm's parameters, small enough to pass by value
// and comparable, so a store can intern it.
type Params struct {
	Kind   Kind
	Limit  int64         // limit (Slide, Fixed, Log) or capacity (Token, Leaky)
	Rate   int64         // units per Period (Token, Leaky); unused by the others
	Period time.Duration // window (Slide, Fixed, Log) or refill/drain period (Token, Leaky)
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Slide returns p as Slide parameters.
func (p Params) Slide() Slide { return Slide{Limit: p.Limit, Window: p.Period} }

// Token returns p as Token parameters.
func (p Params) Token() Token { return Token{Capacity: p.Limit, Rate: p.Rate, Period: p.Period} }

// Fixed returns p as Fixed parameters.
func (p Params) Fixed() Fixed { return Fixed{Limit: p.Limit, Window: p.Period} }

// Log returns p as Log parameters.
func (p Params) Log() Log { return Log{Limit: p.Limit, Window: p.Period} }

// Leaky returns p as Leaky parameters.
func (p Params) Leaky() Leaky { return Leaky{Capacity: p.Limit, Rate: p.Rate, Period: p.Period} }

// Validate reports whether p names an algorithm and its parameters can be honoured.
func (p Params) Validate() error {
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
	}
	return ErrKind
}
