package server

// connectionCommands are the commands about the connection itself.
func connectionCommands() []command {
	return []command{
		{name: "ping", arity: -1, flags: flagNoAuth, run: cmdPing},
	}
}

func cmdPing(s *Server, c *client, args [][]byte) {
	if len(args) > 1 {
		c.conn.WriteBulk(args[1])
		return
	}
	c.conn.WriteString("PONG")
}
