package decide

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
	"github.com/tidwall/redcon"
)

// AliasCommands are other servers' GCRA commands on CL.THROTTLE's state
// (docs/commands.md, GCRA and THROTTLE): Redis's shelved GCRA and
// throttlecrab's THROTTLE. Each is a token bucket decision through the
// decision seam with its own reply.
func (d *Decisions) AliasCommands() []core.Command {
	return []core.Command{
		{Name: nameGCRA, Arity: -5, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.gcra, Changes: changesKey, Group: "rl",
			Summary: "GCRA as Redis 8.8's shelved command: replies limited, max_burst+1, remaining, retry_after_s, reset_after_s"},
		{Name: nameTHROTTLE, Arity: -5, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.throttle, Changes: changesKey, Group: "rl",
			Summary: "GCRA as throttlecrab's THROTTLE: replies allowed, max_burst, remaining, reset_after_s, retry_after_s"},
	}
}

func (d *Decisions) gcra(x *core.Session, args [][]byte) {
	p, n, err := ParseGCRA(args)
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	if o, ok := d.decideAlias(x, args[1], p, n); ok {
		limited := int64(1)
		retry := int64(-1)
		if o.Allowed {
			limited = 0
		} else if o.Wait != window.Never {
			retry = ceilSeconds(o.Wait)
		}
		writeInts(x, limited, p.Limit, o.Remaining, retry, ceilSeconds(o.Reset))
	}
}

func (d *Decisions) throttle(x *core.Session, args [][]byte) {
	p, n, err := ParseThrottleCrab(args)
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	if o, ok := d.decideAlias(x, args[1], p, n); ok {
		allowed, retry := int64(0), int64(0)
		if o.Allowed {
			allowed = 1
		} else if o.Wait == window.Never {
			retry = -1
		} else {
			retry = ceilSeconds(o.Wait)
		}
		writeInts(x, allowed, p.Limit, o.Remaining, ceilSeconds(o.Reset), retry)
	}
}

// decideAlias decides n units of p on key through the decision seam; n 0 peeks.
func (d *Decisions) decideAlias(x *core.Session, key []byte, p window.Params, n int64) (window.Decision, bool) {
	r := Request{Op: OpNative, Params: p, Cost: max(n, 1), Peek: n == 0}
	r.Now, r.By, r.conn = d.clock.At(x, x.Mark), x, d.slot.Get(x)
	o, err := d.Decide(key, &r)
	if err != nil {
		x.Out.WriteError(Reply(err))
		return window.Decision{}, false
	}
	return o.D, true
}

// ceilSeconds rounds d up to whole seconds, as gcra.c's ceil(us / 1e6) does.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func writeInts(x *core.Session, vs ...int64) {
	b := redcon.AppendArray(x.Scratch[:0], len(vs))
	for _, v := range vs {
		b = redcon.AppendInt(b, v)
	}
	x.Scratch = b
	x.Out.WriteRaw(b)
}
