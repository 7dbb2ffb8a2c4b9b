package server

// rlstore has one database, database 0, and its database commands answer as
// a redis-server with "databases 1" does: FLUSHDB is FLUSHALL, SELECT and
// SWAPDB take only 0, and MOVE has nowhere to move a key to.

// Replies of the database commands, in Redis's words.
const (
	errSwapDBFirst   = "ERR invalid first DB index"
	errSwapDBSecond  = "ERR invalid second DB index"
	errSwapDBCluster = "ERR SWAPDB is not allowed in cluster mode"
	errMoveCluster   = "ERR MOVE is not allowed in cluster mode"
	errSameObject    = "ERR source and destination objects are the same"
)

func databaseCommands() []command {
	return []command{
		// A rename-command for FLUSHALL written before FLUSHDB existed must not
		// leave FLUSHDB's equal power open: it follows FLUSHALL's rename.
		{name: "flushdb", arity: -1, flags: flagWrite | flagAllKeys, run: cmdFlushAll, follows: "flushall",
			summary: "Deletes every key's state: FLUSHALL, as there is one database"},
		{name: "swapdb", arity: 3, flags: flagWrite, run: cmdSwapDB,
			summary: "Swaps two databases: there is only database 0"},
		{name: "move", arity: 3, flags: flagWrite, run: cmdMove, firstKey: 1, lastKey: 1, keyStep: 1,
			summary: "Moves a key to another database: there is only database 0"},
	}
}

// cmdSwapDB is SWAPDB index1 index2: OK for 0 and 0, as in Redis, which
// swaps nothing then.
func cmdSwapDB(s *Server, c *client, args [][]byte) {
	a, okA := parseInt(args[1])
	b, okB := parseInt(args[2])
	switch {
	case s.cl != nil:
		c.conn.WriteError(errSwapDBCluster)
	case !okA:
		c.conn.WriteError(errSwapDBFirst)
	case !okB:
		c.conn.WriteError(errSwapDBSecond)
	case a != 0 || b != 0:
		c.conn.WriteError(errDBIndex)
	default:
		c.conn.WriteString("OK")
	}
}

// cmdMove is MOVE key db: database 0 is the key's own, and there is no other.
func cmdMove(s *Server, c *client, args [][]byte) {
	db, ok := parseInt(args[2])
	switch {
	case s.cl != nil:
		c.conn.WriteError(errMoveCluster)
	case !ok:
		c.conn.WriteError(errNotInt)
	case db != 0:
		c.conn.WriteError(errDBIndex)
	default:
		c.conn.WriteError(errSameObject)
	}
}
