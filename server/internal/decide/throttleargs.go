package decide

import (
	"errors"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
)

// The argument errors of CL.THROTTLE.
const (
	errArgMaxBurst  policy.Error = "ERR max_burst must be at least 0 and small enough that a full burst refills within 36500d"
	errArgThrCount  policy.Error = "ERR count must be at least 1 and at most one per nanosecond of the period"
	errArgThrPeriod policy.Error = "ERR period must be between 1 and 315360000 seconds"
)

// ParseThrottle parses CL.THROTTLE's arguments as redis-cell does: integers
// as Rust's i64::from_str reads them.
func ParseThrottle(args [][]byte) (window.Throttle, int64, error) {
	if len(args) < 5 || len(args) > 6 {
		return window.Throttle{}, 0, policy.Error(core.ArityError(nameThrottle))
	}
	var n [4]int64
	n[3] = 1
	for i, a := range args[2:] {
		v, ok := parseRustInt(a)
		if !ok {
			return window.Throttle{}, 0, errNotInt
		}
		n[i] = v
	}
	p := window.Throttle{MaxBurst: n[0], Count: n[1], Period: n[2]}
	return p, n[3], checkThrottle(p)
}

// checkThrottle says which rule of window.Throttle.Validate p breaks.
func checkThrottle(p window.Throttle) error {
	switch err := p.Validate(); {
	case err == nil:
		return nil
	case errors.Is(err, window.ErrWindow):
		return errArgThrPeriod
	case errors.Is(err, window.ErrRate):
		return errArgThrCount
	}
	return errArgMaxBurst
}

// parseRustInt parses a base-10 int64 as Rust's i64::from_str does: an
// optional sign, '+' included, then one or more ASCII digits, leading zeros
// allowed; no spaces, decimals or exponents.
func parseRustInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg, b = b[0] == '-', b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(ch-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	switch {
	case neg:
		return int64(-u), true // -(1<<63) wraps to MinInt64
	case u > 1<<63-1:
		return 0, false
	}
	return int64(u), true
}
