package decide

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
)

// paramCacheBytes bounds the parameter bytes a ParamCache keeps.
const paramCacheBytes = 32

// ParamCache holds a connection's last native decision's parameters and the
// argument bytes they were parsed from. A pipeline mostly repeats one
// limit, and comparing a few bytes costs a tenth of parsing and validating
// them again (about 50 instructions against 450 a decision). Parsing is a
// function of the bytes and the kind alone, so a hit gives what parsing
// would; only parameters that parsed without error are kept.
type ParamCache struct {
	kind   window.Kind
	n      int // arguments kept; 0: none
	lens   [3]uint8
	raw    [paramCacheBytes]byte
	params window.Params

	reserve reserveCache // RL.RESERVE's last request (reserve_cache.go)
}

// Parse returns kind's parameters parsed from args, which are the
// Arity(kind) positional parameters of a native command.
func (pc *ParamCache) Parse(kind window.Kind, args [][]byte) (window.Params, error) {
	if pc.hit(kind, args) {
		return pc.params, nil
	}
	p, err := policy.ParseParams(kind, args)
	if err == nil {
		pc.keep(kind, args, p)
	}
	return p, err
}

// hit reports whether args are the bytes pc holds the parameters of.
func (pc *ParamCache) hit(kind window.Kind, args [][]byte) bool {
	if pc.n == 0 || pc.kind != kind || pc.n != len(args) {
		return false
	}
	raw := pc.raw[:]
	for i, a := range args {
		if len(a) != int(pc.lens[i]) {
			return false
		}
		r := raw[:len(a)]
		for j := range r { // a loop: these few bytes cost less than a call to compare them
			if r[j] != a[j] {
				return false
			}
		}
		raw = raw[len(a):]
	}
	return true
}

// keep remembers p as the parameters of args, if their bytes fit.
func (pc *ParamCache) keep(kind window.Kind, args [][]byte, p window.Params) {
	pc.n = 0
	if len(args) > len(pc.lens) {
		return
	}
	off := 0
	for i, a := range args {
		if off+len(a) > len(pc.raw) {
			return
		}
		pc.lens[i] = uint8(len(a))
		off += copy(pc.raw[off:], a)
	}
	pc.kind, pc.n, pc.params = kind, len(args), p
}
