package keyspace

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// Replies of OBJECT and MEMORY, in Redis's words where Redis has them.
const (
	errSyntax = "ERR syntax error"
	ErrNoFreq = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	ErrNoIdle = "ERR idle time is not tracked: rlstore keeps no access times (TTL and PTTL tell when a key's state expires)"
)

// objectCommands are MEMORY and OBJECT: what a key's state is and holds.
func (k *Keyspace) objectCommands() []core.Command {
	const ls = core.FlagLoading | core.FlagStale
	key2 := one(core.KeyRO, 2)
	return []core.Command{
		{Name: "memory", Arity: -2, Group: "server", Summary: "Reports memory use", Subs: []core.Command{
			{Name: "usage", Arity: -3, Flags: core.FlagReadonly, Run: k.memoryUsage, Keys: key2, Summary: "Returns the bytes a key's state holds"},
			{Name: "help", Arity: 2, Flags: ls, Run: k.memoryHelp, Summary: "Lists MEMORY's subcommands"},
		}},
		{Name: "object", Arity: -2, Group: "generic", Summary: "Inspects a key's internals", Subs: []core.Command{
			{Name: "encoding", Arity: 3, Flags: core.FlagReadonly, Run: k.objectEncoding, ACL: core.CatKeyspace, Keys: key2, Summary: "Returns the algorithm whose state the key holds"},
			{Name: "freq", Arity: 3, Flags: core.FlagReadonly, Run: k.objectFreq, ACL: core.CatKeyspace, Keys: key2, Summary: "Not tracked: there is no LFU eviction"},
			{Name: "idletime", Arity: 3, Flags: core.FlagReadonly, Run: k.objectIdle, ACL: core.CatKeyspace, Keys: key2, Summary: "Not tracked: there are no access times"},
			{Name: "refcount", Arity: 3, Flags: core.FlagReadonly, Run: k.objectRefcount, ACL: core.CatKeyspace, Keys: key2, Summary: "Returns 1 for a key that exists"},
			{Name: "help", Arity: 2, Flags: ls, Run: k.objectHelp, ACL: core.CatKeyspace, Summary: "Lists OBJECT's subcommands"},
		}},
	}
}

func (k *Keyspace) memoryUsage(x *core.Session, args [][]byte) {
	if len(args) != 3 && (len(args) != 5 || !core.EqualFold(args[3], "samples")) {
		x.Out.WriteError(errSyntax)
		return
	}
	if len(args) == 5 {
		if _, ok := policy.ParseInt(args[4]); !ok {
			x.Out.WriteError(errNotInt)
			return
		}
	}
	if _, _, live := k.lookup(args[2], k.cfg.Now()); live {
		if n, ok := k.cfg.Store.MemoryUsage(args[2]); ok {
			x.Out.WriteInt64(n)
			return
		}
	}
	x.Null()
}

func (k *Keyspace) objectEncoding(x *core.Session, args [][]byte) {
	kind, _, live := k.lookup(args[2], k.cfg.Now())
	if !live {
		x.Null()
		return
	}
	x.Out.WriteBulkString(kind.String())
}

func (k *Keyspace) objectFreq(x *core.Session, args [][]byte) { k.objectOrNull(x, args[2], ErrNoFreq) }

func (k *Keyspace) objectIdle(x *core.Session, args [][]byte) { k.objectOrNull(x, args[2], ErrNoIdle) }

func (k *Keyspace) objectRefcount(x *core.Session, args [][]byte) {
	if _, _, live := k.lookup(args[2], k.cfg.Now()); live {
		x.Out.WriteInt(1)
		return
	}
	x.Null()
}

// objectOrNull replies null for a key that does not exist, else reply:
// what Redis answers for a key whose OBJECT field it does not track.
func (k *Keyspace) objectOrNull(x *core.Session, key []byte, reply string) {
	if _, _, live := k.lookup(key, k.cfg.Now()); !live {
		x.Null()
		return
	}
	x.Out.WriteError(reply)
}

func (k *Keyspace) memoryHelp(x *core.Session, _ [][]byte) { core.WriteHelp(x, &k.objectCommands()[0]) }
func (k *Keyspace) objectHelp(x *core.Session, _ [][]byte) { core.WriteHelp(x, &k.objectCommands()[1]) }
