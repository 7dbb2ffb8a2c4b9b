package server

import "github.com/rlstore/rlstore/server/internal/core"

// Replies of the connection commands, in Redis's words.
const (
	errDBIndex = "ERR DB index is out of range"
	errNotInt  = "ERR value is not an integer or out of range"
	errSyntax  = "ERR syntax error"
)

// connectionCommands are the commands about the connection itself.
func connectionCommands() []command {
	return []command{
		{name: "ping", arity: -1, run: cmdPing, group: "connection", summary: "Returns PONG, or the message"},
		{name: "echo", arity: 2, run: cmdEcho, group: "connection", summary: "Returns the message"},
		{name: "quit", arity: -1, flags: flagNoAuth | flagNoQueue, run: cmdQuit, group: "connection", summary: "Replies OK and closes the connection"},
		{name: "select", arity: 2, run: cmdSelect, group: "connection", summary: "Selects database 0, the only one"},
	}
}

func cmdPing(s *Server, c *client, args [][]byte) {
	switch len(args) {
	case 1:
		c.conn.WriteString("PONG")
	case 2:
		c.conn.WriteBulk(args[1])
	default:
		c.conn.WriteError(core.ArityError("ping"))
	}
}

func cmdEcho(s *Server, c *client, args [][]byte) { c.conn.WriteBulk(args[1]) }

func cmdQuit(s *Server, c *client, args [][]byte) {
	c.conn.WriteString("OK")
	s.closeAfterReply(c)
}

// cmdSelect accepts database 0, the only one: rate-limit state has no databases.
func cmdSelect(s *Server, c *client, args [][]byte) {
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		c.conn.WriteError(errNotInt)
	case n != 0:
		c.conn.WriteError(errDBIndex)
	default:
		c.conn.WriteString("OK")
	}
}

// authFront is the server as AUTH's and HELLO's auth.Front.
type authFront struct{ s *Server }

func (f authFront) CloseAfterReply(x *core.Session) { f.s.closeAfterReply(f.s.clientOf(x)) }

func (f authFront) Hello(x *core.Session, proto int, name []byte, hasName bool) (int64, string, string) {
	c := f.s.clientOf(x)
	if hasName {
		c.setMeta(func(m *clientMeta) { m.name = string(name) })
	}
	c.setResp(proto)
	return c.id, f.s.mode(), f.s.cfg.Version
}
