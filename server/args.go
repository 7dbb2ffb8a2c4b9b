package server

import (
	"math"
	"time"

	"github.com/rlstore/rlstore/window"
)

// argError is a reply to bad arguments, worded as Redis words it. It is a
// string type so that each error is a constant and an error path allocates nothing.
type argError string

func (e argError) Error() string { return string(e) }

// The argument errors. Each names the problem, in Redis's wording where Redis has one.
const (
	errArgNotInt       argError = "ERR value is not an integer or out of range"
	errArgSyntax       argError = "ERR syntax error"
	errArgWindowDur    argError = "ERR window is not a duration or out of range"
	errArgPeriodDur    argError = "ERR period is not a duration or out of range"
	errArgLimit        argError = "ERR limit must be between 1 and 4294967295"
	errArgWindowWhole  argError = "ERR window must be a whole number of seconds"
	errArgWindowRange  argError = "ERR window must be between 1s and 3650d"
	errArgCapacity     argError = "ERR capacity must be at least 1"
	errArgCapacityBig  argError = "ERR capacity is too large: refilling a full bucket must take at most 36500d"
	errArgRate         argError = "ERR rate must be at least 1"
	errArgRateFast     argError = "ERR rate is too high for the period: at most one token per nanosecond"
	errArgPeriodRange  argError = "ERR period must be between 1ms and 3650d"
	errArgCost         argError = "ERR cost must be at least 1"
	errArgArityRLSlide argError = "ERR wrong number of arguments for 'rl.slide' command"
	errArgArityRLToken argError = "ERR wrong number of arguments for 'rl.token' command"
)

// decisionArgs is one parsed decision command. key aliases the request's bytes.
type decisionArgs struct {
	key    []byte
	params window.Params
	cost   int64
	peek   bool
}

// parseSlide parses RL.SLIDE key limit window [COST n] [PEEK].
func parseSlide(args [][]byte) (decisionArgs, error) {
	if len(args) < 4 {
		return decisionArgs{}, errArgArityRLSlide
	}
	a := decisionArgs{key: args[1], params: window.Params{Kind: window.KindSlide}}
	var ok bool
	if a.params.Limit, ok = parseInt(args[2]); !ok {
		return a, errArgNotInt
	}
	if a.params.Period, ok = parseDuration(args[3]); !ok {
		return a, errArgWindowDur
	}
	if err := parseOptions(args[4:], &a); err != nil {
		return a, err
	}
	return a, checkSlide(a.params.Slide())
}

// parseToken parses RL.TOKEN key capacity rate period [COST n] [PEEK].
func parseToken(args [][]byte) (decisionArgs, error) {
	if len(args) < 5 {
		return decisionArgs{}, errArgArityRLToken
	}
	a := decisionArgs{key: args[1], params: window.Params{Kind: window.KindToken}}
	var ok bool
	if a.params.Limit, ok = parseInt(args[2]); !ok {
		return a, errArgNotInt
	}
	if a.params.Rate, ok = parseInt(args[3]); !ok {
		return a, errArgNotInt
	}
	if a.params.Period, ok = parseDuration(args[4]); !ok {
		return a, errArgPeriodDur
	}
	if err := parseOptions(args[5:], &a); err != nil {
		return a, err
	}
	return a, checkToken(a.params.Token())
}

// parseOptions reads COST n and PEEK, in any order; a repeated option's last value wins.
func parseOptions(opts [][]byte, a *decisionArgs) error {
	a.cost = 1
	for i := 0; i < len(opts); i++ {
		switch {
		case equalFold(opts[i], "peek"):
			a.peek = true
		case equalFold(opts[i], "cost") && i+1 < len(opts):
			n, ok := parseInt(opts[i+1])
			if !ok {
				return errArgNotInt
			}
			a.cost, i = n, i+1
		default:
			return errArgSyntax
		}
	}
	if a.cost < 1 {
		return errArgCost
	}
	return nil
}

// checkSlide says which rule of window.Slide.Validate p breaks, so the reply can name it.
func checkSlide(p window.Slide) error {
	switch {
	case p.Limit < 1 || p.Limit > math.MaxUint32:
		return errArgLimit
	case p.Window%time.Second != 0:
		return errArgWindowWhole
	case p.Validate() != nil:
		return errArgWindowRange
	}
	return nil
}

// checkToken says which rule of window.Token.Validate p breaks, so the reply can name it.
func checkToken(p window.Token) error {
	switch {
	case p.Capacity < 1:
		return errArgCapacity
	case p.Period <= 0 || p.Period > window.MaxWindow:
		return errArgPeriodRange
	case p.Rate < 1:
		return errArgRate
	case int64(p.Period)/p.Rate < 1:
		return errArgRateFast
	case p.Validate() != nil:
		return errArgCapacityBig
	}
	return nil
}

// parseInt parses a base-10 int64 as strictly as Redis's string2ll: an optional
// '-', no '+', no spaces and no leading zeros.
func parseInt(b []byte) (int64, bool) {
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

// parseDuration parses a duration of SPEC §1: whole seconds ("60") or an
// integer with a unit ms, s, m, h or d ("500ms", "7d"). Units are lower case,
// so that "M" is never taken for minutes or months by mistake.
func parseDuration(b []byte) (time.Duration, bool) {
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

// equalFold reports whether b equals s, ignoring ASCII case. s must be lower-case letters.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}
