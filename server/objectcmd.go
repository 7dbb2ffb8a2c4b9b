package server

// Replies of WATCH, in Redis's words where Redis has them.
const (
	errWatchInMulti = "ERR WATCH inside MULTI is not allowed"
	errNoWatch      = "ERR WATCH is not supported: each rlstore command is atomic on its key. For all-or-nothing decisions over several limits use RL.CHECK with a policy; MULTI/EXEC runs commands in order"
)

// objectCommands are WATCH and UNWATCH, which client libraries call about
// keys (MEMORY and OBJECT are package keyspace's).
func objectCommands() []command {
	return []command{
		{name: "watch", arity: -2, flags: flagNoQueue, run: cmdWatch, firstKey: 1, lastKey: -1, keyStep: 1, group: "transactions", summary: "Not supported: answers an error naming RL.CHECK"},
		{name: "unwatch", arity: 1, run: cmdUnwatch, group: "transactions", summary: "Replies OK: nothing is ever watched"},
	}
}

// cmdWatch runs at once inside MULTI, as Redis's does, to answer Redis's
// error there without dooming the transaction.
func cmdWatch(s *Server, c *client, args [][]byte) {
	if c.Multi {
		c.conn.WriteError(errWatchInMulti)
		return
	}
	c.conn.WriteError(errNoWatch)
}

func cmdUnwatch(s *Server, c *client, args [][]byte) { c.conn.WriteString("OK") }
