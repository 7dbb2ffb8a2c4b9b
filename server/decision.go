package server

import (
	"errors"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/tidwall/redcon"
)

// Store errors as Redis words them.
const (
	errReplyWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errReplyOOM       = "OOM command not allowed when used memory > 'maxmemory'."
)

// decisionCommands are the native rate-limit commands of SPEC §3.
func decisionCommands() []command {
	return []command{
		{name: "rl.slide", arity: -4, flags: flagWrite, run: cmdSlide, firstKey: 1, lastKey: 1, keyStep: 1},
		{name: "rl.token", arity: -5, flags: flagWrite, run: cmdToken, firstKey: 1, lastKey: 1, keyStep: 1},
	}
}

func cmdSlide(s *Server, c *client, args [][]byte) {
	a, err := parseSlide(args)
	s.runDecision(c, a, err)
}

func cmdToken(s *Server, c *client, args [][]byte) {
	a, err := parseToken(args)
	s.runDecision(c, a, err)
}

// runDecision replies to a parsed decision command, or to the error that parsing it gave.
func (s *Server) runDecision(c *client, a decisionArgs, err error) {
	if err == nil && shard.Reserved(a.key) {
		err = errArgReserved
	}
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	d, err := s.decide(a.key, a.params, s.cfg.Clock().UnixNano(), a.cost, a.peek)
	if err != nil {
		c.conn.WriteError(decideError(err))
		return
	}
	writeDecision(c, d)
}

// decide decides one request at now (unix nanoseconds). It is the one place a
// decision is made, so that a cluster can later send the key to its owner from here.
func (s *Server) decide(key []byte, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	return s.cfg.Store.Decide(key, p, now, cost, peek)
}

// decideError words a store error as a reply.
func decideError(err error) string {
	var ae argError
	switch {
	case errors.Is(err, shard.ErrWrongType):
		return errReplyWrongType
	case errors.Is(err, shard.ErrFull):
		return errReplyOOM
	case errors.As(err, &ae):
		return string(ae)
	}
	return "ERR " + err.Error() // parsing already rejects what the store would
}

// writeDecision writes the five-integer reply of SPEC §2. It is an array in RESP2 and RESP3 alike.
func writeDecision(c *client, d window.Decision) {
	f := decisionFields(d)
	c.conn.WriteArray(len(f))
	for _, v := range f {
		c.conn.WriteInt64(v)
	}
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
