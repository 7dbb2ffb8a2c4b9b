package server

import (
	"slices"
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

// appendDecision appends the reply writeDecision writes to dst. It writes
// into room it has made for the longest reply, with no check per byte: the
// reply costs a third of the instructions of six calls to redcon's appenders.
func appendDecision(dst []byte, d window.Decision) []byte {
	f := decisionFields(d)
	dst = slices.Grow(dst, maxDecisionReply)
	b := dst[len(dst) : len(dst)+maxDecisionReply]
	b[0], b[1], b[2], b[3] = '*', '0'+byte(len(f)), '\r', '\n'
	n := 4
	for _, v := range f {
		n = putInt(b, n, v)
	}
	return dst[:len(dst)+n]
}

// maxDecisionReply is the longest reply appendDecision writes: "*5\r\n",
// then five integers of at most 20 characters, each framed by ':' and "\r\n".
const maxDecisionReply = 4 + 5*(1+20+2)

// putInt writes RESP's integer ":v\r\n" at b[n:], which must have room for
// it, and returns the index after it. The digits are written in place from
// the last, two at a time.
func putInt(b []byte, n int, v int64) int {
	b[n] = ':'
	n++
	u := uint64(v)
	if v < 0 {
		b[n] = '-'
		n++
		u = -u
	}
	end := n + decimalLen(u)
	i := end
	for u >= 100 {
		q := u / 100
		r := 2 * (u - 100*q)
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		b[i-2], b[i-1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		b[i-1] = '0' + byte(u)
	}
	b[end], b[end+1] = '\r', '\n'
	return end + 2
}

// decimalLen returns the number of decimal digits of u.
func decimalLen(u uint64) int {
	n := 1
	for ; u >= 10000; u /= 10000 {
		n += 4
	}
	switch {
	case u >= 1000:
		return n + 3
	case u >= 100:
		return n + 2
	case u >= 10:
		return n + 1
	}
	return n
}

// digitPairs holds "00" to "99", for writing two digits at a time.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

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
