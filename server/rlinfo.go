package server

import (
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/shard"
)

func rlInfoCommands() []command {
	return []command{{name: "rl.info", arity: 2, flags: flagCacheable, run: cmdRLInfo, firstKey: 1, lastKey: 1, keyStep: 1,
		group: "rl", summary: "Shows a key's algorithm, parameters, count or tokens and ms to expiry"}}
}

// cmdRLInfo is RL.INFO key: a map in RESP3, a flat array in RESP2, or null
// for a key that does not exist (or whose state has expired).
func cmdRLInfo(s *Server, c *client, args [][]byte) {
	now := s.unixNano()
	if s.reg != nil && s.reg.Global(args[1]) { // server/internal/global
		if ps := pairsOf(s.reg.InfoSplit(args[1])); len(ps) > 0 {
			core.WriteMap(&c.Session, ps)
			return
		}
	}
	inf, ok := s.cfg.Store.Get(args[1], now)
	if !ok || inf.Expiry <= now || policy.Reserved(args[1]) {
		s.info.misses.Add(1)
		c.Null()
		return
	}
	s.info.hits.Add(1)
	ps := infoPairs(inf, now)
	if s.cl != nil {
		ps = append(ps, core.Pair{Key: "owner", Val: s.cl.view().Self}) // the node that answered: a forwarded RL.INFO runs at the owner
	}
	core.WriteMap(&c.Session, ps)
}

// infoPairs names inf's fields: the parameters as the algorithm's command
// takes them, and Count as window names it.
func infoPairs(inf shard.Info, now int64) []core.Pair {
	p := inf.Params
	ps := []core.Pair{{Key: "algorithm", Val: p.Kind.String()}}
	switch {
	case p.Kind.Rated():
		ps = append(ps, core.Pair{Key: "capacity", Val: p.Limit}, core.Pair{Key: "rate", Val: p.Rate}, core.Pair{Key: "period_ms", Val: decide.CeilMs(p.Period)})
	case p.Kind.Native():
		ps = append(ps, core.Pair{Key: "limit", Val: p.Limit}, core.Pair{Key: "window_ms", Val: decide.CeilMs(p.Period)})
		if p.FirstHit {
			ps = append(ps, core.Pair{Key: "anchor", Val: "first"})
		}
	default: // a lease has no window: each lease its own ttl
		ps = append(ps, core.Pair{Key: "limit", Val: p.Limit})
	}
	return append(ps, core.Pair{Key: p.Kind.CountName(), Val: inf.Count}, core.Pair{Key: "ttl_ms", Val: decide.CeilMs(time.Duration(inf.Expiry - now))})
}
