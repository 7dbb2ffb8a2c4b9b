package server

// MULTI/EXEC isolation, stated honestly: EXEC runs the queued commands one
// after another on this connection, with nothing else of this client's in
// between. Each command is atomic on its key, as every command is, but the
// whole EXEC is not isolated from other clients: their commands on the same
// keys may run between two of the queued ones. There is no WATCH. As in
// Redis, a command refused while queueing (unknown, wrong arity, NOAUTH, not
// allowed in MULTI) makes EXEC abort with EXECABORT, and a command that fails
// when EXEC runs it gets its error in EXEC's reply while the others run.

// Replies of the transaction commands, in Redis's words.
const (
	errMultiNested = "ERR MULTI calls can not be nested"
	errExecNoMulti = "ERR EXEC without MULTI"
	errDiscNoMulti = "ERR DISCARD without MULTI"
	errExecAbort   = "EXECABORT Transaction discarded because of previous errors."
)

func transactionCommands() []command {
	return []command{
		{name: "multi", arity: 1, flags: flagNoQueue | flagKeepsCaching, run: cmdMulti, group: "transactions", summary: "Starts queueing commands for EXEC"},
		{name: "exec", arity: 1, flags: flagNoQueue | flagBarrier, run: cmdExec, group: "transactions", summary: "Runs the queued commands in order"},
		{name: "discard", arity: 1, flags: flagNoQueue, run: cmdDiscard, group: "transactions", summary: "Drops the queued commands"},
	}
}

func cmdMulti(s *Server, c *client, args [][]byte) {
	if c.Multi {
		c.conn.WriteError(errMultiNested) // as in Redis, this does not doom the transaction
		return
	}
	c.Multi = true
	c.QLen.Store(0)
	c.conn.WriteString("OK")
}

func cmdExec(s *Server, c *client, args [][]byte) {
	if !c.Multi {
		c.conn.WriteError(errExecNoMulti)
		return
	}
	q, dirty := c.Queue, c.Dirty
	endMulti(c)
	if dirty {
		c.conn.WriteError(errExecAbort)
		return
	}
	if s.cl != nil && s.execElsewhere(c, q) {
		return
	}
	c.conn.WriteArray(len(q))
	c.ob.SetInExec(true) // tracking's pushes wait for the end of EXEC's reply
	for _, e := range q {
		s.run(c, e.Cmd, e.Args)
	}
	c.ob.SetInExec(false)
}

func cmdDiscard(s *Server, c *client, args [][]byte) {
	if !c.Multi {
		c.conn.WriteError(errDiscNoMulti)
		return
	}
	endMulti(c)
	c.conn.WriteString("OK")
}

// endMulti leaves MULTI. The queue's array is not reused, so EXEC may still run what it held.
func endMulti(c *client) {
	c.Multi, c.Dirty, c.Queue, c.QBytes = false, false, nil, 0
	c.QLen.Store(-1)
}
