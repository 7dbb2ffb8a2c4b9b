package server

import (
	"github.com/rlstore/rlstore/server/internal/clientcmd"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/introspect"
	"github.com/rlstore/rlstore/server/internal/resp"
)

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
		{name: "quit", arity: -1, flags: core.FlagNoAuth | core.FlagNoQueue, run: cmdQuit, group: "connection", summary: "Replies OK and closes the connection"},
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
		c.conn.WriteError(core.ArityError(c.running.Name)) // as Redis's ping checks its own, by the entry's name
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
		c.SetMeta(func(m *core.Meta) { m.Name = string(name) })
	}
	c.setResp(proto)
	return c.ID, f.s.mode(), f.s.cfg.Version
}

// registerClient registers CLIENT: its own subcommands (package clients),
// then observe's for client-side caching.
func (s *Server) registerClient() {
	cl := clientcmd.New(s.clients, clientsDelegate{s})
	cm := cl.Command()
	cm.Subs = append(cm.Subs, s.obs.TrackingCommands()...)
	specs := introspect.Specs()
	s.table.Register(cm, func(name string) core.Spec { return specs[name] })
	cl.Registered(s.table.Lookup(cm.Name))
}

// clientsDelegate is the server as CLIENT's clientcmd.Delegate.
type clientsDelegate struct{ s *Server }

func (d clientsDelegate) Tracking(x *core.Session) (sub, redir int64, flags string) {
	ob := &d.s.clientOf(x).ob
	return ob.Subscribed(), ob.Redir(), ob.Flags()
}

func (d clientsDelegate) CloseAfterReply(x *core.Session) { d.s.closeAfterReply(d.s.clientOf(x)) }

// clientList returns the connected sessions in the order they connected.
func (s *Server) clientList() []*core.Session { return s.clients.List() }

// newBudget returns the budget of all clients' replies (resp.Budget), which
// closes the client holding the most first once they pass max.
func (s *Server) newBudget(max int64) *resp.Budget {
	return &resp.Budget{Max: max, Evict: s.evictLargest}
}

// evictLargest closes the client holding the most replies, and reports
// whether it found one to close (core.Registry.Largest).
func (s *Server) evictLargest(self *resp.Conn) bool {
	victim, most := s.clients.Largest()
	if victim == nil || !s.mem.Take(victim.Conn, self, most) {
		return victim != nil
	}
	s.log.Warn("client closed: the replies of all clients passed --maxmemory-clients; closing those holding the most first",
		"client", victim.ID, "addr", victim.Addr, "held", most, "maxmemory_clients", s.mem.Max)
	return true
}
