package server

import (
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

func rlInfoCommands() []command {
	return []command{{name: "rl.info", arity: 2, run: cmdRLInfo, firstKey: 1, lastKey: 1, keyStep: 1,
		group: "rl", summary: "Shows a key's algorithm, parameters, count or tokens and ms to expiry"}}
}

// cmdRLInfo is RL.INFO key: a map in RESP3, a flat array in RESP2, or null
// for a key that does not exist (or whose state has expired).
func cmdRLInfo(s *Server, c *client, args [][]byte) {
	now := s.unixNano()
	inf, ok := s.cfg.Store.Get(args[1], now)
	if !ok || inf.Expiry <= now || shard.Reserved(args[1]) {
		writeNull(c)
		return
	}
	writeMap(c, infoPairs(inf, now))
}

// infoPairs names inf's fields. Count is "count" for the counting algorithms,
// "tokens" for a token bucket and "queued" for a leaky bucket.
func infoPairs(inf shard.Info, now int64) []pair {
	p := inf.Params
	ps := []pair{{"algorithm", p.Kind.String()}}
	switch p.Kind {
	case window.KindToken, window.KindLeaky:
		ps = append(ps, pair{"capacity", p.Limit}, pair{"rate", p.Rate}, pair{"period_ms", ceilMs(p.Period)})
	default:
		ps = append(ps, pair{"limit", p.Limit}, pair{"window_ms", ceilMs(p.Period)})
	}
	name := map[window.Kind]string{window.KindToken: "tokens", window.KindLeaky: "queued"}[p.Kind]
	if name == "" {
		name = "count"
	}
	return append(ps, pair{name, inf.Count}, pair{"ttl_ms", ceilMs(time.Duration(inf.Expiry - now))})
}
