package decide

import (
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/tidwall/redcon"
)

// writeOutcome writes the reply of the command that asked for r: the decision reply's (docs/commands.md)
// five integers, RL.CHECK's six, or CL.THROTTLE's redis-cell reply.
func writeOutcome(x *core.Session, r *Request, o Outcome) {
	switch r.Op {
	case OpThrottle:
		t := o.Throttle
		limited := int64(0)
		if t.Limited {
			limited = 1
		}
		b := redcon.AppendArray(x.Scratch[:0], 5)
		for _, v := range [5]int64{limited, t.Limit, t.Remaining, t.RetryAfter, t.ResetAfter} {
			b = redcon.AppendInt(b, v)
		}
		x.Scratch = b
		x.Out.WriteRaw(b)
	case OpCheck:
		x.Out.WriteArray(6)
		for _, v := range Fields(o.D) {
			x.Out.WriteInt64(v)
		}
		x.Out.WriteInt64(int64(o.Rule))
	default:
		WriteDecision(x, o.D)
	}
}

// AppendCommand appends to dst the arguments of a command that asks for r on
// key: what a node that does not own key sends to its owner, which decides
// it at its own time (r.Now is not sent).
func (r *Request) AppendCommand(dst [][]byte, key []byte) [][]byte {
	num := func(n int64) []byte { return strconv.AppendInt(nil, n, 10) }
	switch r.Op {
	case OpThrottle:
		t := r.Throttle
		return append(dst, []byte(nameThrottle), key, num(t.MaxBurst), num(t.Count), num(t.Period), num(r.Cost))
	case OpCheck:
		dst = append(dst, []byte(nameCheck), []byte(r.Policy.Name), key)
	default:
		p := r.Params
		dst = append(dst, []byte(NativeName(p.Kind)), key, num(p.Limit))
		if p.Kind.Rated() {
			dst = append(dst, num(p.Rate))
		}
		dst = append(dst, append(num(int64(p.Period/time.Millisecond)), "ms"...))
		if p.FirstHit {
			dst = append(dst, []byte("ANCHOR"), []byte("FIRST"))
		}
	}
	dst = append(dst, []byte("COST"), num(r.Cost))
	if r.Peek {
		dst = append(dst, []byte("PEEK"))
	}
	return dst
}
