package decide

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
		if core.EqualFold(args[2], k.String()) {
			kind = k
		}
	}
	if kind == window.KindNone {
		return window.Params{}, 0, errArgReserveRule
	}
	n := 3 + policy.Arity(kind)
	if len(args) < n {
		return window.Params{}, 0, policy.Error(core.ArityError(name))
	}
	p, err := policy.ParseParams(kind, args[3:n])
	return p, n, err
}

// cmdRefund runs RL.REFUND key [SLIDE|FIXED|TOKEN params…] COST n.
func (d *Decisions) refund(x *core.Session, args [][]byte) {
	if d.front.RefusedGlobal(x, args[1], "RL.REFUND") { // a region's global key (decide.Front)
		return
	}
	r := shard.ReserveRequest{Op: shard.Refund}
	n := 2
	if len(args) > 4 && !core.EqualFold(args[2], "cost") { // a rule first
		var err error
		if r.Params, n, err = parseAdjustRule("rl.refund", args); err != nil {
			x.Out.WriteError(err.Error())
			return
		}
	}
	if len(args) != n+2 || !core.EqualFold(args[n], "cost") {
		x.Out.WriteError(string(errSyntax))
		return
	}
	units, ok := policy.ParseInt(args[n+1])
	switch {
	case !ok:
		x.Out.WriteError(string(errNotInt))
	case units < 1:
		x.Out.WriteError(string(ErrCost))
	default:
		r.Units = units
		d.reserveBool(x, args[1], &r)
	}
}
