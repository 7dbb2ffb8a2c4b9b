package server

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// parseAdjustRule parses the rule of RL.RESERVE or RL.REFUND, args[2] and
// its parameters: SLIDE, FIXED or TOKEN, as RL.SLIDE, RL.FIXED or RL.TOKEN
// take them. It returns the index of the first argument after them.
func parseAdjustRule(name string, args [][]byte) (window.Params, int, error) {
	var kind window.Kind
	for _, k := range []window.Kind{window.KindSlide, window.KindFixed, window.KindToken} {
		if equalFoldASCII(args[2], k.String()) {
			kind = k
		}
	}
	if kind == window.KindNone {
		return window.Params{}, 0, errArgReserveRule
	}
	n := 3 + policy.Arity(kind)
	if len(args) < n {
		return window.Params{}, 0, argError(core.ArityError(name))
	}
	p, err := policy.ParseParams(kind, args[3:n])
	return p, n, err
}

// cmdRefund runs RL.REFUND key [SLIDE|FIXED|TOKEN params…] COST n.
func cmdRefund(s *Server, c *client, args [][]byte) {
	if s.refusedGlobal(c, args[1], "RL.REFUND") { // region.go
		return
	}
	r := shard.ReserveRequest{Op: shard.Refund}
	n := 2
	if len(args) > 4 && !equalFoldASCII(args[2], "cost") { // a rule first
		var err error
		if r.Params, n, err = parseAdjustRule("rl.refund", args); err != nil {
			c.conn.WriteError(err.Error())
			return
		}
	}
	if len(args) != n+2 || !equalFoldASCII(args[n], "cost") {
		c.conn.WriteError(string(errArgSyntax))
		return
	}
	units, ok := parseInt(args[n+1])
	switch {
	case !ok:
		c.conn.WriteError(string(errArgNotInt))
	case units < 1:
		c.conn.WriteError(string(errArgCost))
	default:
		r.Units = units
		reserveBool(s, c, args[1], &r)
	}
}
