package server

import (
	"errors"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/window"
	"github.com/tidwall/redcon"
)

// The argument errors of GCRA and THROTTLE, as the servers that have them word them.
const (
	errArgPositive   argError = "ERR value is out of range, must be positive"
	errArgAtLeastOne argError = "ERR value is out of range, value must between 1 and 9223372036854775807"
	errArgFloat      argError = "ERR value is not a valid float"
	errArgGCRAPeriod argError = "ERR period must be > 0 and < 1e12"
	errArgGCRAMissin argError = "ERR Missing TOKENS value"
	errArgGCRARange  argError = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow"
	errArgGCRALong   argError = "ERR period must be at most 315360000 seconds"
	errArgThrottle   argError = "ERR invalid max_burst, count_per_period or period"
)

// aliasCommands are other servers' GCRA commands on CL.THROTTLE's state
// (docs/commands.md, GCRA and THROTTLE): Redis's shelved GCRA and
// throttlecrab's THROTTLE. Each is a token bucket decision through the
// decision seam with its own reply.
func aliasCommands() []command {
	return []command{
		{name: "gcra", arity: -5, flags: flagWrite | flagAnnounces, run: cmdGCRA, changes: changesKey, group: "rl",
			summary: "GCRA as Redis 8.8's shelved command: replies limited, max_burst+1, remaining, retry_after_s, reset_after_s"},
		{name: "throttle", arity: -5, flags: flagWrite | flagAnnounces, run: cmdThrottle, changes: changesKey, group: "rl",
			summary: "GCRA as throttlecrab's THROTTLE: replies allowed, max_burst, remaining, reset_after_s, retry_after_s"},
	}
}

// parseGCRA parses GCRA key max_burst tokens_per_period period [TOKENS n]
// as Redis's src/gcra.c does; period is in seconds and may have a fraction.
func parseGCRA(args [][]byte) (window.Params, int64, error) {
	if len(args) > 7 {
		return window.Params{}, 0, argError(core.ArityError("gcra"))
	}
	burst, ok := parseInt(args[2])
	switch {
	case !ok:
		return window.Params{}, 0, errArgNotInt
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
		case !equalFoldASCII(args[5], "tokens"):
			return window.Params{}, 0, errArgSyntax
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

func atLeastOne(b []byte) (int64, error) {
	v, ok := parseInt(b)
	switch {
	case !ok:
		return 0, errArgNotInt
	case v < 1:
		return 0, errArgAtLeastOne
	}
	return v, nil
}

// parseThrottleCrab parses THROTTLE key max_burst count_per_period period
// [quantity] as throttlecrab does: a bucket of max_burst (not max_burst+1,
// as CL.THROTTLE's), refilled at count_per_period per period seconds. A
// quantity of 0 peeks.
func parseThrottleCrab(args [][]byte) (window.Params, int64, error) {
	if len(args) > 6 {
		return window.Params{}, 0, argError(core.ArityError("throttle"))
	}
	var n [4]int64
	n[3] = 1
	for i, a := range args[2:] {
		v, ok := parseInt(a)
		if !ok {
			return window.Params{}, 0, errArgNotInt
		}
		n[i] = v
	}
	p := window.Params{Kind: window.KindToken, Limit: n[0], Rate: n[1], Period: time.Duration(n[2]) * time.Second}
	if n[2] < 1 || n[2] > int64(window.MaxWindow/time.Second) || p.Validate() != nil {
		return p, 0, errArgThrottle
	}
	if n[3] < 0 {
		return p, 0, decide.ErrCost
	}
	return p, n[3], nil
}

func cmdGCRA(s *Server, c *client, args [][]byte) {
	p, n, err := parseGCRA(args)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	if o, ok := s.decideAlias(c, args[1], p, n); ok {
		limited := int64(1)
		retry := int64(-1)
		if o.Allowed {
			limited = 0
		} else if o.Wait != window.Never {
			retry = ceilSeconds(o.Wait)
		}
		writeInts(c, limited, p.Limit, o.Remaining, retry, ceilSeconds(o.Reset))
	}
}

func cmdThrottle(s *Server, c *client, args [][]byte) {
	p, n, err := parseThrottleCrab(args)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	if o, ok := s.decideAlias(c, args[1], p, n); ok {
		allowed, retry := int64(0), int64(0)
		if o.Allowed {
			allowed = 1
		} else if o.Wait == window.Never {
			retry = -1
		} else {
			retry = ceilSeconds(o.Wait)
		}
		writeInts(c, allowed, p.Limit, o.Remaining, ceilSeconds(o.Reset), retry)
	}
}

// decideAlias decides n units of p on key through the decision seam; n 0 peeks.
func (s *Server) decideAlias(c *client, key []byte, p window.Params, n int64) (window.Decision, bool) {
	r := request{op: opNative, params: p, cost: max(n, 1), peek: n == 0}
	r.now, r.by = s.commandNow(c), c
	o, err := s.decide(key, &r)
	if err != nil {
		c.conn.WriteError(decide.Reply(err))
		return window.Decision{}, false
	}
	return o.d, true
}

// ceilSeconds rounds d up to whole seconds, as gcra.c's ceil(us / 1e6) does.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func writeInts(c *client, vs ...int64) {
	b := redcon.AppendArray(c.Scratch[:0], len(vs))
	for _, v := range vs {
		b = redcon.AppendInt(b, v)
	}
	c.Scratch = b
	c.conn.WriteRaw(b)
}
