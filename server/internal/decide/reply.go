package decide

import (
	"slices"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
)

// WriteDecision writes the five-integer reply (docs/commands.md, The decision reply). It is an array in RESP2 and RESP3 alike.
// The reply is built in the session's scratch buffer and written in one call:
// six calls through the connection's wrappers cost more than the formatting.
func WriteDecision(x *core.Session, d window.Decision) {
	x.Scratch = AppendDecision(x.Scratch[:0], d)
	x.Out.WriteRaw(x.Scratch)
}

// AppendDecision appends the reply WriteDecision writes to dst. It writes
// into room it has made for the longest reply, with no check per byte: the
// reply costs a third of the instructions of six calls to redcon's appenders.
func AppendDecision(dst []byte, d window.Decision) []byte {
	f := Fields(d)
	dst = slices.Grow(dst, MaxReply)
	b := dst[len(dst) : len(dst)+MaxReply]
	b[0], b[1], b[2], b[3] = '*', '0'+byte(len(f)), '\r', '\n'
	n := 4
	for _, v := range f {
		n = PutInt(b, n, v)
	}
	return dst[:len(dst)+n]
}

// MaxReply is the longest reply AppendDecision writes: "*5\r\n",
// then five integers of at most 20 characters, each framed by ':' and "\r\n".
const MaxReply = 4 + 5*(1+20+2)

// AppendWithID appends a six-element reply of integers with an id second
// (RL.ACQUIRE's and RL.RESERVE's): first, the id as a bulk string, then
// rest. It writes as AppendDecision does, into room made for the longest
// such reply: redcon's appenders, a call for each field and strconv for
// each number above 9, cost about 150 instructions more a reply.
func AppendWithID(dst []byte, first int64, id []byte, rest [4]int64) []byte {
	room := maxIDReply + len(id)
	dst = slices.Grow(dst, room)
	b := dst[len(dst) : len(dst)+room]
	// The fields are mostly 0 to 9: those are written here, without
	// PutInt's call.
	b[0], b[1], b[2], b[3] = '*', '6', '\r', '\n'
	n := 4
	if uint64(first) < 10 {
		b[n], b[n+1], b[n+2], b[n+3] = ':', '0'+byte(first), '\r', '\n'
		n += 4
	} else {
		n = PutInt(b, n, first)
	}
	if len(id) < 10 {
		b[n], b[n+1], b[n+2], b[n+3] = '$', '0'+byte(len(id)), '\r', '\n'
		n += 4
	} else {
		at := n
		n = PutInt(b, n, int64(len(id)))
		b[at] = '$' // a bulk string's header: PutInt's ':' made '$'
	}
	n += copy(b[n:], id)
	b[n], b[n+1] = '\r', '\n'
	n += 2
	for _, v := range rest {
		if uint64(v) < 10 {
			b[n], b[n+1], b[n+2], b[n+3] = ':', '0'+byte(v), '\r', '\n'
			n += 4
			continue
		}
		n = PutInt(b, n, v)
	}
	return dst[:len(dst)+n]
}

// maxIDReply is the longest reply AppendWithID writes but for its id's
// bytes: "*6\r\n", five integers and a bulk string's length of at most 20
// characters, each framed by a ':' or '$' and "\r\n", and the id's "\r\n".
const maxIDReply = 4 + 6*(1+20+2) + 2

// PutInt writes RESP's integer ":v\r\n" at b[n:], which must have room for
// it, and returns the index after it. The digits are written in place from
// the last, two at a time.
func PutInt(b []byte, n int, v int64) int {
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

// Fields returns allowed, limit, remaining, wait_ms and reset_ms.
func Fields(d window.Decision) [5]int64 {
	allowed := int64(0)
	if d.Allowed {
		allowed = 1
	}
	return [5]int64{allowed, d.Limit, d.Remaining, WaitMs(d.Wait), CeilMs(d.Reset)}
}

// WaitMs is CeilMs, except that window.Never stays -1.
func WaitMs(d time.Duration) int64 {
	if d == window.Never {
		return -1
	}
	return CeilMs(d)
}

// CeilMs rounds d up to whole milliseconds, so that a client that waits that
// long is never early. Negative durations, which no algorithm should return, read as 0.
func CeilMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
