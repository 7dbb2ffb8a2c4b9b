package keyspace

import (
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// Config is what the key commands need of the server, set once at start.
type Config struct {
	Store *shard.Map
	Now   func() int64 // the time, in unix nanoseconds: the server's clock

	// Flush empties the store for FLUSHALL, through whatever must hear of
	// it in order (the log, the replicas).
	Flush func() error
	// Forget and ForgetAll drop what else the server keeps of a key DEL
	// deletes, or of every key (the regions' state); nil: nothing.
	Forget    func(key []byte)
	ForgetAll func()
	// Clustered refuses SWAPDB and MOVE, as Redis Cluster does.
	Clustered bool
	// Hits and Misses count the reads of keys that exist and that do not,
	// for INFO's keyspace_hits and keyspace_misses.
	Hits, Misses *atomic.Int64
}

// Keyspace runs the key commands. Make it with New; it is safe for
// concurrent use, as the store is.
type Keyspace struct{ cfg Config }

// New returns the key commands over cfg.
func New(cfg Config) *Keyspace { return &Keyspace{cfg: cfg} }

// Commands are the key commands' table entries (docs/commands.md,
// Inspection and keyspace).
//
// A key whose state has expired but that Sweep has not yet freed no longer
// restricts anything, so, like a Redis key past its TTL, it does not exist for
// EXISTS, TYPE, TTL, PTTL, SCAN, KEYS or DEL's count. DBSIZE, like Redis's,
// still counts it until it is freed.
func (k *Keyspace) Commands() []core.Command {
	cmds := []core.Command{
		{Name: "del", Arity: -2, Flags: core.FlagWrite, Run: k.del, Changes: changesArgs, ACL: core.CatKeyspace,
			Keys: rest(core.KeyRM|core.KeyDelete, 1)},
		{Name: "exists", Arity: -2, Flags: core.FlagCacheable | core.FlagReadonly | core.FlagFast, Run: k.exists, ACL: core.CatKeyspace,
			Keys: rest(core.KeyRO, 1)},
		{Name: "type", Arity: 2, Flags: core.FlagCacheable | core.FlagReadonly | core.FlagFast, Run: k.typ, ACL: core.CatKeyspace,
			Keys: one(core.KeyRO, 1)},
		{Name: "pttl", Arity: 2, Flags: core.FlagCacheable | core.FlagReadonly | core.FlagFast, Run: k.pttlCmd, ACL: core.CatKeyspace,
			Keys: one(core.KeyRO|core.KeyAccess, 1)},
		{Name: "ttl", Arity: 2, Flags: core.FlagCacheable | core.FlagReadonly | core.FlagFast, Run: k.ttl, ACL: core.CatKeyspace,
			Keys: one(core.KeyRO|core.KeyAccess, 1)},
		{Name: "scan", Arity: -2, Flags: core.FlagReadonly, Run: k.scanCmd, ACL: core.CatKeyspace},
		{Name: "keys", Arity: 2, Flags: core.FlagReadonly, Run: k.keys, ACL: core.CatKeyspace | core.CatDangerous},
		{Name: "dbsize", Arity: 1, Flags: core.FlagReadonly | core.FlagFast, Run: k.dbsize, ACL: core.CatKeyspace},
		{Name: "flushall", Arity: -1, Flags: core.FlagWrite | core.FlagAllKeys, Run: k.flushAll, ACL: core.CatKeyspace | core.CatDangerous},
	}
	cmds = append(cmds, k.databaseCommands()...)
	return append(cmds, k.objectCommands()...)
}

// one is the key spec of a command with one key at index.
func one(flags core.KeyFlags, index int) []core.KeySpec {
	return []core.KeySpec{{Flags: flags, Index: index, Step: 1}}
}

// rest is the key spec of a command whose every argument from index on is a key.
func rest(flags core.KeyFlags, index int) []core.KeySpec {
	return []core.KeySpec{{Flags: flags, Index: index, LastKey: -1, Step: 1}}
}

// changesArgs is DEL's changes: every argument is a key it may delete.
func changesArgs(args [][]byte) ([][]byte, []byte) { return args[1:], nil }

// Lookup returns the algorithm of key's state in store and when it
// expires, or false if the key does not exist or its state has expired by
// now.
//
// Policy state lives under reserved keys (policy.Reserved), which are hidden:
// to every key command they do not exist, though DBSIZE counts them.
func Lookup(store *shard.Map, key []byte, now int64) (window.Kind, int64, bool) {
	if policy.Reserved(key) {
		return window.KindNone, 0, false
	}
	inf, ok := store.Get(key, now)
	if !ok || inf.Expiry <= now {
		return window.KindNone, 0, false
	}
	return inf.Params.Kind, inf.Expiry, true
}

// lookup is Lookup in k's store.
func (k *Keyspace) lookup(key []byte, now int64) (window.Kind, int64, bool) {
	return Lookup(k.cfg.Store, key, now)
}

// read is lookup for a command that reads the key, counted as a hit or a miss.
func (k *Keyspace) read(key []byte, now int64) (window.Kind, int64, bool) {
	kind, exp, live := k.lookup(key, now)
	if live {
		k.cfg.Hits.Add(1)
	} else {
		k.cfg.Misses.Add(1)
	}
	return kind, exp, live
}

// del counts a key named twice once, as Redis does: the second time it is gone.
func (k *Keyspace) del(x *core.Session, args [][]byte) {
	now, n := k.cfg.Now(), int64(0)
	for _, key := range args[1:] {
		_, _, live := k.lookup(key, now)
		if k.cfg.Forget != nil {
			k.cfg.Forget(key)
		}
		if !policy.Reserved(key) && k.cfg.Store.Delete(key) && live {
			n++
		}
	}
	x.Out.WriteInt64(n)
}

// exists counts a key named twice twice, as Redis does.
func (k *Keyspace) exists(x *core.Session, args [][]byte) {
	now, n := k.cfg.Now(), int64(0)
	for _, key := range args[1:] {
		if _, _, live := k.read(key, now); live {
			n++
		}
	}
	x.Out.WriteInt64(n)
}

func (k *Keyspace) typ(x *core.Session, args [][]byte) {
	kind, _, _ := k.read(args[1], k.cfg.Now())
	x.Out.WriteString(kind.String())
}

func (k *Keyspace) pttlCmd(x *core.Session, args [][]byte) {
	x.Out.WriteInt64(k.pttl(args[1]))
}

// ttl rounds to the nearest second, as Redis's TTL does.
func (k *Keyspace) ttl(x *core.Session, args [][]byte) {
	ms := k.pttl(args[1])
	if ms >= 0 {
		ms = (ms + 500) / 1000
	}
	x.Out.WriteInt64(ms)
}

// pttl returns the ms until key's state expires, rounded up, or -2 if it does not exist.
// Every state expires by itself, so the -1 of a Redis key without a TTL never occurs.
func (k *Keyspace) pttl(key []byte) int64 {
	now := k.cfg.Now()
	_, exp, live := k.read(key, now)
	if !live {
		return -2
	}
	return ceilMs(time.Duration(exp - now))
}

// ceilMs is d in milliseconds, rounded up; 0 if d is not positive.
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

func (k *Keyspace) dbsize(x *core.Session, args [][]byte) {
	x.Out.WriteInt64(k.cfg.Store.Len())
}

// flushAll flushes at once whichever mode is asked for: the store frees a shard at a time.
func (k *Keyspace) flushAll(x *core.Session, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !core.EqualFold(args[1], "async") && !core.EqualFold(args[1], "sync")) {
		x.Out.WriteError(string(policy.ErrSyntax))
		return
	}
	if k.cfg.ForgetAll != nil {
		k.cfg.ForgetAll()
	}
	if err := k.cfg.Flush(); err != nil {
		x.Out.WriteError("ERR " + err.Error())
		return
	}
	x.Out.WriteString("OK")
}
