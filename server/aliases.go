package server

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/window"
	"github.com/tidwall/redcon"
)

// aliasCommands are other servers' GCRA commands on CL.THROTTLE's state
// (docs/commands.md, GCRA and THROTTLE): Redis's shelved GCRA and
// throttlecrab's THROTTLE. Each is a token bucket decision through the
// decision seam with its own reply.
func aliasCommands() []command {
	return []command{
		{name: "gcra", arity: -5, flags: flagWrite | flagAnnounces, run: cmdGCRA, changes: changesKey, group: "rl",
			summary: "GCRA as Redis 8.8's shelved command: replies limited, max_burst+1, remaining, retry_after_s, reset_after_s"},
		{name: "throttle", arity: -5, flags: flagWrite | flagAnnounces, run: cmdThrottle, changes: changesKey, group: "rl",
			summary: "GCRA as throttlecrab's THROTTLE: replies allowed, max_burst, remaining, reset_after_s, retry_after_s"},
	}
}

func cmdGCRA(s *Server, c *client, args [][]byte) {
	p, n, err := decide.ParseGCRA(args)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	if o, ok := s.decideAlias(c, args[1], p, n); ok {
		limited := int64(1)
		retry := int64(-1)
		if o.Allowed {
			limited = 0
		} else if o.Wait != window.Never {
			retry = ceilSeconds(o.Wait)
		}
		writeInts(c, limited, p.Limit, o.Remaining, retry, ceilSeconds(o.Reset))
	}
}

func cmdThrottle(s *Server, c *client, args [][]byte) {
	p, n, err := decide.ParseThrottleCrab(args)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	if o, ok := s.decideAlias(c, args[1], p, n); ok {
		allowed, retry := int64(0), int64(0)
		if o.Allowed {
			allowed = 1
		} else if o.Wait == window.Never {
			retry = -1
		} else {
			retry = ceilSeconds(o.Wait)
		}
		writeInts(c, allowed, p.Limit, o.Remaining, ceilSeconds(o.Reset), retry)
	}
}

// decideAlias decides n units of p on key through the decision seam; n 0 peeks.
func (s *Server) decideAlias(c *client, key []byte, p window.Params, n int64) (window.Decision, bool) {
	r := request{op: opNative, params: p, cost: max(n, 1), peek: n == 0}
	r.now, r.by = s.commandNow(c), c
	o, err := s.decide(key, &r)
	if err != nil {
		c.conn.WriteError(decide.Reply(err))
		return window.Decision{}, false
	}
	return o.d, true
}

// ceilSeconds rounds d up to whole seconds, as gcra.c's ceil(us / 1e6) does.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func writeInts(c *client, vs ...int64) {
	b := redcon.AppendArray(c.Scratch[:0], len(vs))
	for _, v := range vs {
		b = redcon.AppendInt(b, v)
	}
	c.Scratch = b
	c.conn.WriteRaw(b)
}
