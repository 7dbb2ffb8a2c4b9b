package keyspace

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// rlstore has one database, database 0, and its database commands answer as
// a redis-server with "databases 1" does: FLUSHDB is FLUSHALL, SELECT and
// SWAPDB take only 0, and MOVE has nowhere to move a key to.

// Replies of the database commands, in Redis's words.
const (
	errDBIndex       = "ERR DB index is out of range"
	errNotInt        = "ERR value is not an integer or out of range"
	errSwapDBFirst   = "ERR invalid first DB index"
	errSwapDBSecond  = "ERR invalid second DB index"
	ErrSwapDBCluster = "ERR SWAPDB is not allowed in cluster mode"
	ErrMoveCluster   = "ERR MOVE is not allowed in cluster mode"
	errSameObject    = "ERR source and destination objects are the same"
)

func (k *Keyspace) databaseCommands() []core.Command {
	return []core.Command{
		// A rename-command for FLUSHALL written before FLUSHDB existed must not
		// leave FLUSHDB's equal power open: it follows FLUSHALL's rename.
		{Name: "flushdb", Arity: -1, Flags: core.FlagWrite | core.FlagAllKeys, Run: k.flushAll, Follows: "flushall",
			ACL: core.CatKeyspace | core.CatDangerous, Summary: "Deletes every key's state: FLUSHALL, as there is one database"},
		{Name: "swapdb", Arity: 3, Flags: core.FlagWrite | core.FlagFast, Run: k.swapDB,
			ACL: core.CatKeyspace | core.CatDangerous, Summary: "Swaps two databases: there is only database 0"},
		{Name: "move", Arity: 3, Flags: core.FlagWrite | core.FlagFast, Run: k.move, ACL: core.CatKeyspace,
			Keys: one(core.KeyRW|core.KeyAccess|core.KeyUpdate, 1), Summary: "Moves a key to another database: there is only database 0"},
	}
}

// swapDB is SWAPDB index1 index2: OK for 0 and 0, as in Redis, which
// swaps nothing then.
func (k *Keyspace) swapDB(x *core.Session, args [][]byte) {
	a, okA := policy.ParseInt(args[1])
	b, okB := policy.ParseInt(args[2])
	switch {
	case k.cfg.Clustered:
		x.Out.WriteError(ErrSwapDBCluster)
	case !okA:
		x.Out.WriteError(errSwapDBFirst)
	case !okB:
		x.Out.WriteError(errSwapDBSecond)
	case a != 0 || b != 0:
		x.Out.WriteError(errDBIndex)
	default:
		x.Out.WriteString("OK")
	}
}

// move is MOVE key db: database 0 is the key's own, and there is no other.
func (k *Keyspace) move(x *core.Session, args [][]byte) {
	db, ok := policy.ParseInt(args[2])
	switch {
	case k.cfg.Clustered:
		x.Out.WriteError(ErrMoveCluster)
	case !ok:
		x.Out.WriteError(errNotInt)
	case db != 0:
		x.Out.WriteError(errDBIndex)
	default:
		x.Out.WriteError(errSameObject)
	}
}
