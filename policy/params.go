package policy

import (
	"errors"
	"math"
	"time"

	"github.com/rlstore/rlstore/window"
)

// Error is a reply to a bad definition or argument, worded as Redis words
// it. It is a string type so that each error is a constant and an error path
// allocates nothing.
type Error string

func (e Error) Error() string { return string(e) }

// The errors of algorithm parameters, naming the rule each breaks.
const (
	ErrNotInt        Error = "ERR value is not an integer or out of range"
	ErrSyntax        Error = "ERR syntax error"
	errWindowDur     Error = "ERR window is not a duration or out of range"
	errPeriodDur     Error = "ERR period is not a duration or out of range"
	errSlideLimit    Error = "ERR limit must be between 1 and 4294967295"
	errWindowWhole   Error = "ERR window must be a whole number of seconds"
	errWindowSeconds Error = "ERR window must be between 1s and 3650d"
	errLimitMin      Error = "ERR limit must be at least 1"
	errLogLimit      Error = "ERR limit must be between 1 and 4000"
	errWindowMs      Error = "ERR window must be between 1ms and 3650d"
	errCapacity      Error = "ERR capacity must be at least 1"
	errCapacityBig   Error = "ERR capacity is too large: refilling a full bucket must take at most 36500d"
	errRate          Error = "ERR rate must be at least 1"
	errRateFast      Error = "ERR rate is too high for the period: at most one token per nanosecond"
	errPeriodRange   Error = "ERR period must be between 1ms and 3650d"
	errParamsGeneric Error = "ERR the algorithm's parameters are out of range"
	errLimitGeneric  Error = "ERR limit out of range"
	errWindowGeneric Error = "ERR window out of range"
	errRateGeneric   Error = "ERR rate out of range"
	errRuleArgs      Error = "ERR wrong number of arguments for a policy rule"
)

// field is one positional parameter of an algorithm, as its command and a
// policy rule take it: an integer, or a duration (docs/commands.md, Conventions) whose misreading
// gets bad.
type field struct {
	duration bool
	bad      Error
}

// fields returns the positional parameters kind takes: limit and window, or
// capacity, rate and period (Kind.Rated).
func fields(kind window.Kind) []field {
	if kind.Rated() {
		return []field{{bad: ErrNotInt}, {bad: ErrNotInt}, {duration: true, bad: errPeriodDur}}
	}
	return []field{{bad: ErrNotInt}, {duration: true, bad: errWindowDur}}
}

// Arity returns how many positional parameters kind takes.
func Arity(kind window.Kind) int {
	if kind.Rated() {
		return 3
	}
	return 2
}

// ParseParams parses kind's positional parameters from the first Arity(kind)
// of args, as RL.<KIND> and a policy rule take them, and checks that the
// store can honour them: the error names the rule they break.
func ParseParams(kind window.Kind, args [][]byte) (window.Params, error) {
	p := window.Params{Kind: kind}
	fs := fields(kind)
	if len(args) < len(fs) {
		return p, errRuleArgs
	}
	var v [3]int64
	for i, f := range fs {
		var ok bool
		if f.duration {
			var d time.Duration
			d, ok = ParseDuration(args[i])
			v[i] = int64(d)
		} else {
			v[i], ok = ParseInt(args[i])
		}
		if !ok {
			return p, f.bad
		}
	}
	p.Limit, p.Period = v[0], time.Duration(v[len(fs)-1])
	if kind.Rated() {
		p.Rate = v[1]
	}
	return p, checkParams(p)
}

// checkParams says which rule of window's Validate p breaks, so that the
// reply can name it. An algorithm without wording of its own here gets the
// generic wording of window's sentinel errors.
func checkParams(p window.Params) error {
	err := p.Validate()
	if err == nil {
		return nil
	}
	switch p.Kind {
	case window.KindSlide:
		return checkSlide(p)
	case window.KindToken, window.KindLeaky:
		return checkRated(p)
	case window.KindFixed, window.KindLog:
		return checkLimitWindow(p)
	}
	switch {
	case errors.Is(err, window.ErrLimit):
		return errLimitGeneric
	case errors.Is(err, window.ErrWindow):
		return errWindowGeneric
	case errors.Is(err, window.ErrRate):
		return errRateGeneric
	}
	return errParamsGeneric
}

func checkSlide(p window.Params) error {
	switch {
	case p.Limit < 1 || p.Limit > math.MaxUint32:
		return errSlideLimit
	case p.Period%time.Second != 0:
		return errWindowWhole
	}
	return errWindowSeconds
}

func checkRated(p window.Params) error {
	switch {
	case p.Limit < 1:
		return errCapacity
	case p.Period <= 0 || p.Period > window.MaxWindow:
		return errPeriodRange
	case p.Rate < 1:
		return errRate
	case int64(p.Period)/p.Rate < 1:
		return errRateFast
	}
	return errCapacityBig
}

func checkLimitWindow(p window.Params) error {
	switch {
	case p.Kind == window.KindLog && (p.Limit < 1 || p.Limit > window.MaxLogLimit):
		return errLogLimit
	case p.Limit < 1:
		return errLimitMin
	}
	return errWindowMs
}

// ParseInt parses a base-10 int64 as strictly as Redis's string2ll: an optional
// '-', no '+', no spaces and no leading zeros.
func ParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseDigits(b)
	switch {
	case !ok || (neg && u == 0):
		return 0, false
	case neg && u <= 1<<63:
		return int64(-u), true // -u wraps to MinInt64's bits for u == 1<<63
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// parseDigits parses a non-empty run of at most 19 decimal digits with no
// leading zero ("0" itself aside). 19 digits cannot overflow a uint64.
func parseDigits(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var u uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		u = u*10 + uint64(ch-'0')
	}
	return u, true
}

// ParseDuration parses a duration (docs/commands.md, Conventions): whole seconds ("60") or an
// integer with a unit ms, s, m, h or d ("500ms", "7d"). Units are lower case,
// so that "M" is never taken for minutes or months by mistake.
func ParseDuration(b []byte) (time.Duration, bool) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	unit, ok := durationUnit(b[i:])
	if !ok {
		return 0, false
	}
	n, ok := parseDigits(b[:i])
	if !ok || n > uint64(math.MaxInt64/unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// durationUnit returns the length of a duration suffix; none means seconds.
func durationUnit(s []byte) (time.Duration, bool) {
	switch string(s) { // the compiler does not allocate for a switch on string(bytes)
	case "", "s":
		return time.Second, true
	case "ms":
		return time.Millisecond, true
	case "m":
		return time.Minute, true
	case "h":
		return time.Hour, true
	case "d":
		return 24 * time.Hour, true
	}
	return 0, false
}
