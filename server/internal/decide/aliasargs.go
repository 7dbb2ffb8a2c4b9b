package decide

import (
	"errors"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
)

// The argument errors of GCRA and THROTTLE, as the servers that have them word them.
const (
	errArgPositive   policy.Error = "ERR value is out of range, must be positive"
	errArgAtLeastOne policy.Error = "ERR value is out of range, value must between 1 and 9223372036854775807"
	errArgFloat      policy.Error = "ERR value is not a valid float"
	errArgGCRAPeriod policy.Error = "ERR period must be > 0 and < 1e12"
	errArgGCRAMissin policy.Error = "ERR Missing TOKENS value"
	errArgGCRARange  policy.Error = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow"
	errArgGCRALong   policy.Error = "ERR period must be at most 315360000 seconds"
	errArgThrottle   policy.Error = "ERR invalid max_burst, count_per_period or period"
)

// ParseGCRA parses GCRA key max_burst tokens_per_period period [TOKENS n]
// as Redis's src/gcra.c does; period is in seconds and may have a fraction.
func ParseGCRA(args [][]byte) (window.Params, int64, error) {
	if len(args) > 7 {
		return window.Params{}, 0, policy.Error(core.ArityError(nameGCRA))
	}
	burst, ok := policy.ParseInt(args[2])
	switch {
	case !ok:
		return window.Params{}, 0, errNotInt
	case burst < 0:
		return window.Params{}, 0, errArgPositive
	}
	per, err := atLeastOne(args[3])
	if err != nil {
		return window.Params{}, 0, err
	}
	period, err := strconv.ParseFloat(string(args[4]), 64)
	switch {
	case err != nil || period != period:
		return window.Params{}, 0, errArgFloat
	case period <= 0 || period >= 1e12:
		return window.Params{}, 0, errArgGCRAPeriod
	}
	n := int64(1)
	if len(args) >= 6 {
		switch {
		case !core.EqualFold(args[5], "tokens"):
			return window.Params{}, 0, errSyntax
		case len(args) == 6:
			return window.Params{}, 0, errArgGCRAMissin
		}
		if n, err = atLeastOne(args[6]); err != nil {
			return window.Params{}, 0, err
		}
	}
	p := window.Params{Kind: window.KindToken, Limit: burst + 1, Rate: per, Period: time.Duration(period * float64(time.Second))}
	if burst == 1<<63-1 {
		return p, n, errArgGCRARange
	}
	switch err := p.Validate(); {
	case errors.Is(err, window.ErrWindow):
		return p, n, errArgGCRALong
	case err != nil:
		return p, n, errArgGCRARange
	}
	return p, n, nil
}

// atLeastOne parses a count of at least 1, as gcra.c does.
func atLeastOne(b []byte) (int64, error) {
	v, ok := policy.ParseInt(b)
	switch {
	case !ok:
		return 0, errNotInt
	case v < 1:
		return 0, errArgAtLeastOne
	}
	return v, nil
}

// ParseThrottleCrab parses THROTTLE key max_burst count_per_period period
// [quantity] as throttlecrab does: a bucket of max_burst (not max_burst+1,
// as CL.THROTTLE's), refilled at count_per_period per period seconds. A
// quantity of 0 peeks.
func ParseThrottleCrab(args [][]byte) (window.Params, int64, error) {
	if len(args) > 6 {
		return window.Params{}, 0, policy.Error(core.ArityError(nameTHROTTLE))
	}
	var n [4]int64
	n[3] = 1
	for i, a := range args[2:] {
		v, ok := policy.ParseInt(a)
		if !ok {
			return window.Params{}, 0, errNotInt
		}
		n[i] = v
	}
	p := window.Params{Kind: window.KindToken, Limit: n[0], Rate: n[1], Period: time.Duration(n[2]) * time.Second}
	if n[2] < 1 || n[2] > int64(window.MaxWindow/time.Second) || p.Validate() != nil {
		return p, 0, errArgThrottle
	}
	if n[3] < 0 {
		return p, 0, ErrCost
	}
	return p, n[3], nil
}
