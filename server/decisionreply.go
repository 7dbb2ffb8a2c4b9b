package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/window"
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
		b := redcon.AppendArray(c.scratch[:0], 5)
		for _, v := range [5]int64{limited, t.Limit, t.Remaining, t.RetryAfter, t.ResetAfter} {
			b = redcon.AppendInt(b, v)
		}
		c.scratch = b
		c.conn.WriteRaw(b)
	case opCheck:
		c.conn.WriteArray(6)
		for _, v := range decisionFields(o.d) {
			c.conn.WriteInt64(v)
		}
		c.conn.WriteInt64(int64(o.rule))
	default:
		writeDecision(c, o.d)
	}
}

// writeDecision writes the five-integer reply (docs/commands.md, The decision reply). It is an array in RESP2 and RESP3 alike.
// The reply is built in the client's scratch buffer and written in one call:
// six calls through the connection's wrappers cost more than the formatting.
func writeDecision(c *client, d window.Decision) {
	c.scratch = appendDecision(c.scratch[:0], d)
	c.conn.WriteRaw(c.scratch)
}

// appendDecision appends the reply writeDecision writes to dst.
func appendDecision(dst []byte, d window.Decision) []byte {
	f := decisionFields(d)
	dst = redcon.AppendArray(dst, len(f))
	for _, v := range f {
		dst = redcon.AppendInt(dst, v)
	}
	return dst
}

// decisionFields returns allowed, limit, remaining, wait_ms and reset_ms.
func decisionFields(d window.Decision) [5]int64 {
	allowed := int64(0)
	if d.Allowed {
		allowed = 1
	}
	return [5]int64{allowed, d.Limit, d.Remaining, waitMs(d.Wait), ceilMs(d.Reset)}
}

// waitMs is ceilMs, except that window.Never stays -1.
func waitMs(d time.Duration) int64 {
	if d == window.Never {
		return -1
	}
	return ceilMs(d)
}

// ceilMs rounds d up to whole milliseconds, so that a client that waits that
// long is never early. Negative durations, which no algorithm should return, read as 0.
func ceilMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// nativeName returns the native decision command that runs kind's algorithm.
func nativeName(kind window.Kind) string { return "RL." + strings.ToUpper(kind.String()) }

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
		dst = append(dst, []byte(nativeName(p.Kind)), key, num(p.Limit))
		if p.Kind.Rated() {
			dst = append(dst, num(p.Rate))
		}
		dst = append(dst, append(num(int64(p.Period/time.Millisecond)), "ms"...))
	}
	dst = append(dst, []byte("COST"), num(r.cost))
	if r.peek {
		dst = append(dst, []byte("PEEK"))
	}
	return dst
}
