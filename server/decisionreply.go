package server

import (
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/tidwall/redcon"
)

// writeOutcome writes the reply of the command that asked for r: the decision reply's (docs/commands.md)
// five integers, RL.CHECK's six, or CL.THROTTLE's redis-cell reply.
func writeOutcome(c *client, r *request, o outcome) {
	switch r.op {
	case opThrottle:
		t := o.throttle
		limited := int64(0)
		if t.Limited {
			limited = 1
		}
		b := redcon.AppendArray(c.Scratch[:0], 5)
		for _, v := range [5]int64{limited, t.Limit, t.Remaining, t.RetryAfter, t.ResetAfter} {
			b = redcon.AppendInt(b, v)
		}
		c.Scratch = b
		c.conn.WriteRaw(b)
	case opCheck:
		c.conn.WriteArray(6)
		for _, v := range decide.Fields(o.d) {
			c.conn.WriteInt64(v)
		}
		c.conn.WriteInt64(int64(o.rule))
	default:
		decide.WriteDecision(&c.Session, o.d)
	}
}

// appendCommand appends to dst the arguments of a command that asks for r on
// key: what a node that does not own key sends to its owner, which decides
// it at its own time (r.now is not sent).
func (r *request) appendCommand(dst [][]byte, key []byte) [][]byte {
	num := func(n int64) []byte { return strconv.AppendInt(nil, n, 10) }
	switch r.op {
	case opThrottle:
		t := r.throttle
		return append(dst, []byte("CL.THROTTLE"), key, num(t.MaxBurst), num(t.Count), num(t.Period), num(r.cost))
	case opCheck:
		dst = append(dst, []byte("RL.CHECK"), []byte(r.policy.Name), key)
	default:
		p := r.params
		dst = append(dst, []byte(decide.NativeName(p.Kind)), key, num(p.Limit))
		if p.Kind.Rated() {
			dst = append(dst, num(p.Rate))
		}
		dst = append(dst, append(num(int64(p.Period/time.Millisecond)), "ms"...))
		if p.FirstHit {
			dst = append(dst, []byte("ANCHOR"), []byte("FIRST"))
		}
	}
	dst = append(dst, []byte("COST"), num(r.cost))
	if r.peek {
		dst = append(dst, []byte("PEEK"))
	}
	return dst
}
