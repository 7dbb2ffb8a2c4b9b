package decide

import (
	"strings"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
)

// NativeArgs is one parsed native decision command. Key aliases the request's bytes.
type NativeArgs struct {
	Key    []byte
	Params window.Params
	Cost   int64
	Peek   bool
}

// ParseNative parses RL.<KIND> key params… [COST n] [PEEK], the native
// command of kind's algorithm: its parameters as policy.ParseParams reads
// them for commands and policy rules alike, then the options.
// pc, if not nil, caches the parameters.
func ParseNative(kind window.Kind, args [][]byte, pc *ParamCache) (NativeArgs, error) {
	n := 2 + policy.Arity(kind)
	if len(args) < n {
		return NativeArgs{}, policy.Error(core.ArityError(strings.ToLower(NativeName(kind))))
	}
	a := NativeArgs{Key: args[1]}
	var err error
	if pc != nil {
		a.Params, err = pc.Parse(kind, args[2:n])
	} else {
		a.Params, err = policy.ParseParams(kind, args[2:n])
	}
	if err != nil {
		return a, err
	}
	return a, ParseOptions(args[n:], &a)
}

// ParseOptions reads COST n, PEEK and (RL.FIXED) ANCHOR FIRST|EPOCH, in
// any order; a repeated option's last value wins.
func ParseOptions(opts [][]byte, a *NativeArgs) error {
	a.Cost = 1
	for i := 0; i < len(opts); i++ {
		switch {
		case core.EqualFold(opts[i], "peek"):
			a.Peek = true
		case core.EqualFold(opts[i], "anchor") && i+1 < len(opts): // anchor.go
			if err := parseAnchor(opts[i+1], &a.Params); err != nil {
				return err
			}
			i++
		case core.EqualFold(opts[i], "cost") && i+1 < len(opts):
			n, ok := policy.ParseInt(opts[i+1])
			if !ok {
				return errNotInt
			}
			a.Cost, i = n, i+1
		default:
			return errSyntax
		}
	}
	if a.Cost < 1 {
		return ErrCost
	}
	return nil
}

// NativeName returns the native decision command that runs kind's algorithm.
func NativeName(kind window.Kind) string { return "RL." + strings.ToUpper(kind.String()) }
