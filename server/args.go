package server

import (
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/window"
)

// argError is a reply to bad arguments, worded as Redis words it. It is a
// string type so that each error is a constant and an error path allocates nothing.
type argError = policy.Error

// The argument errors of the decision commands' options, and those every
// command shares with the parser of algorithm parameters (package policy).
const (
	errArgNotInt = policy.ErrNotInt
	errArgSyntax = policy.ErrSyntax
)

// decisionArgs is one parsed native decision command. key aliases the request's bytes.
type decisionArgs struct {
	key    []byte
	params window.Params
	cost   int64
	peek   bool
}

// parseNative parses RL.<KIND> key params… [COST n] [PEEK], the native
// command of kind's algorithm: its parameters as policy.ParseParams reads
// them for commands and policy rules alike, then the options.
// pc, if not nil, caches the parameters.
func parseNative(kind window.Kind, args [][]byte, pc *decide.ParamCache) (decisionArgs, error) {
	n := 2 + policy.Arity(kind)
	if len(args) < n {
		return decisionArgs{}, argError(core.ArityError(nativeName(kind)))
	}
	a := decisionArgs{key: args[1]}
	var err error
	if pc != nil {
		a.params, err = pc.Parse(kind, args[2:n])
	} else {
		a.params, err = policy.ParseParams(kind, args[2:n])
	}
	if err != nil {
		return a, err
	}
	return a, parseOptions(args[n:], &a)
}

// parseOptions reads COST n, PEEK and (RL.FIXED) ANCHOR FIRST|EPOCH, in
// any order; a repeated option's last value wins.
func parseOptions(opts [][]byte, a *decisionArgs) error {
	a.cost = 1
	for i := 0; i < len(opts); i++ {
		switch {
		case equalFoldASCII(opts[i], "peek"):
			a.peek = true
		case equalFoldASCII(opts[i], "anchor") && i+1 < len(opts): // anchor.go
			if err := parseAnchor(opts[i+1], &a.params); err != nil {
				return err
			}
			i++
		case equalFoldASCII(opts[i], "cost") && i+1 < len(opts):
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
		return decide.ErrCost
	}
	return nil
}

// parseInt parses a base-10 int64 as strictly as Redis's string2ll (see policy.ParseInt).
func parseInt(b []byte) (int64, bool) { return policy.ParseInt(b) }

// parseDuration parses a duration (docs/commands.md, Conventions) (see policy.ParseDuration).
func parseDuration(b []byte) (time.Duration, bool) { return policy.ParseDuration(b) }
