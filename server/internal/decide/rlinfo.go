package decide

import (
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
)

// InfoCommands is RL.INFO, a read of a decision key's state; hits and
// misses count the keys it found and did not (INFO's keyspace_hits and
// keyspace_misses, which the keyspace's reads count too).
func (d *Decisions) InfoCommands(hits, misses *atomic.Int64) []core.Command {
	run := func(x *core.Session, args [][]byte) { d.info(x, args, hits, misses) }
	return []core.Command{{Name: "rl.info", Arity: 2, Flags: core.FlagCacheable, Run: run, FirstKey: 1, LastKey: 1, KeyStep: 1,
		Group: "rl", Summary: "Shows a key's algorithm, parameters, count or tokens and ms to expiry"}}
}

// info is RL.INFO key: a map in RESP3, a flat array in RESP2, or null
// for a key that does not exist (or whose state has expired).
func (d *Decisions) info(x *core.Session, args [][]byte, hits, misses *atomic.Int64) {
	now := d.clock.Read().UnixNano()
	if d.regions != nil && d.regions.Global(args[1]) {
		if ps := d.regions.InfoSplit(args[1]); len(ps) > 0 {
			core.WriteMap(x, ps)
			return
		}
	}
	inf, ok := d.store.Get(args[1], now)
	if !ok || inf.Expiry <= now || policy.Reserved(args[1]) {
		misses.Add(1)
		x.Null()
		return
	}
	hits.Add(1)
	ps := infoPairs(inf, now)
	if owner := d.front.Owner(); owner != "" {
		ps = append(ps, core.Pair{Key: "owner", Val: owner}) // the node that answered: a forwarded RL.INFO runs at the owner
	}
	core.WriteMap(x, ps)
}

// infoPairs names inf's fields: the parameters as the algorithm's command
// takes them, and Count as window names it.
func infoPairs(inf shard.Info, now int64) []core.Pair {
	p := inf.Params
	ps := []core.Pair{{Key: "algorithm", Val: p.Kind.String()}}
	switch {
	case p.Kind.Rated():
		ps = append(ps, core.Pair{Key: "capacity", Val: p.Limit}, core.Pair{Key: "rate", Val: p.Rate}, core.Pair{Key: "period_ms", Val: CeilMs(p.Period)})
	case p.Kind.Native():
		ps = append(ps, core.Pair{Key: "limit", Val: p.Limit}, core.Pair{Key: "window_ms", Val: CeilMs(p.Period)})
		if p.FirstHit {
			ps = append(ps, core.Pair{Key: "anchor", Val: "first"})
		}
	default: // a lease has no window: each lease its own ttl
		ps = append(ps, core.Pair{Key: "limit", Val: p.Limit})
	}
	return append(ps, core.Pair{Key: p.Kind.CountName(), Val: inf.Count}, core.Pair{Key: "ttl_ms", Val: CeilMs(time.Duration(inf.Expiry - now))})
}
