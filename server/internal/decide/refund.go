package decide

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// parseAdjustRule parses the rule of RL.RESERVE or RL.REFUND, args[2] and
// its parameters: SLIDE, FIXED or TOKEN, as RL.SLIDE, RL.FIXED or RL.TOKEN
// take them, through pc if it is not nil (a pipeline of reservations
// mostly repeats one rule: about 500 instructions a reservation). It
// returns the index of the first argument after them.
func parseAdjustRule(name string, args [][]byte, pc *ParamCache) (window.Params, int, error) {
	kind := adjustKind(args[2])
	if kind == window.KindNone {
		return window.Params{}, 0, errArgReserveRule
	}
	n := 3 + policy.Arity(kind)
	if len(args) < n {
		return window.Params{}, 0, policy.Error(core.ArityError(name))
	}
	if pc != nil {
		p, err := pc.Parse(kind, args[3:n])
		return p, n, err
	}
	p, err := policy.ParseParams(kind, args[3:n])
	return p, n, err
}

// adjustKind is the kind a rule named b runs, SLIDE, FIXED or TOKEN in any
// case, or window.KindNone: one name compared, chosen by its first letter.
func adjustKind(b []byte) window.Kind {
	if len(b) != 5 {
		return window.KindNone
	}
	kind, name := window.KindNone, ""
	switch b[0] | 0x20 {
	case 's':
		kind, name = window.KindSlide, "slide"
	case 'f':
		kind, name = window.KindFixed, "fixed"
	case 't':
		kind, name = window.KindToken, "token"
	}
	if kind == window.KindNone || !isWord(b, name) {
		return window.KindNone
	}
	return kind
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
		if r.Params, n, err = parseAdjustRule(nameRefund, args, d.params(x)); err != nil {
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
