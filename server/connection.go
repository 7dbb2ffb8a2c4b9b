package server

import (
	"strings"
	"time"

	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/observe"
)

// Replies of the connection commands, in Redis's words.
const (
	errWrongPass   = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassSet   = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errNoProto     = "NOPROTO unsupported protocol version"
	errProtoNotInt = "ERR Protocol version is not an integer or out of range"
	errDBIndex     = "ERR DB index is out of range"
	errNotInt      = "ERR value is not an integer or out of range"
	errSyntax      = "ERR syntax error"
)

// redisVersion is the Redis version rlstore answers as. Clients read it to
// decide what they may send; rlstore speaks what Redis 7.0 clients send.
const redisVersion = "7.0.0"

// connectionCommands are the commands about the connection itself.
func connectionCommands() []command {
	return []command{
		{name: "ping", arity: -1, run: cmdPing, group: "connection", summary: "Returns PONG, or the message"},
		{name: "echo", arity: 2, run: cmdEcho, group: "connection", summary: "Returns the message"},
		{name: "quit", arity: -1, flags: flagNoAuth | flagNoQueue, run: cmdQuit, group: "connection", summary: "Replies OK and closes the connection"},
		{name: "select", arity: 2, run: cmdSelect, group: "connection", summary: "Selects database 0, the only one"},
		{name: "auth", arity: -2, flags: flagNoAuth, run: cmdAuth, secret: observe.SecretArgs, group: "connection", summary: "Authenticates the connection"},
		{name: "hello", arity: -1, flags: flagNoAuth, run: cmdHello, secret: observe.SecretHelloAuth, group: "connection", summary: "Handshakes: protocol version, AUTH and SETNAME"},
	}
}

func cmdPing(s *Server, c *client, args [][]byte) {
	switch len(args) {
	case 1:
		c.conn.WriteString("PONG")
	case 2:
		c.conn.WriteBulk(args[1])
	default:
		c.conn.WriteError(arityError("ping"))
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

// cmdAuth is AUTH [user] pass. The only user is "default", as in a Redis
// without ACLs; it needs no password unless requirepass is set.
func cmdAuth(s *Server, c *client, args [][]byte) {
	if len(args) > 3 {
		c.conn.WriteError(errSyntax)
		return
	}
	if len(args) == 2 && s.users.ACL() == nil && s.users.RequirePass() == "" {
		c.conn.WriteError(errNoPassSet)
		return
	}
	if s.login(c, args[1:]) {
		c.conn.WriteString("OK")
	}
}

// maxAuthFailures is how many wrong passwords a connection that has not
// authenticated may send before it is closed, so that one connection cannot
// pipeline guesses by the hundred thousand. A client with the wrong password
// configured fails on its first try anyway.
const maxAuthFailures = 5

// wrongPass refuses a wrong password, and closes a connection that has not
// authenticated once it has sent maxAuthFailures of them.
func (s *Server) wrongPass(c *client) { s.refuseAuth(c, errWrongPass) }

func (s *Server) refuseAuth(c *client, reply string) {
	s.authFailures.Add(1)
	c.conn.WriteError(reply)
	if c.authFails++; c.authFails >= maxAuthFailures && !c.Authed {
		s.log.Debug("closing a client after repeated wrong passwords", "client", c.id, "addr", c.addr, "failures", c.authFails)
		s.closeAfterReply(c)
	}
}

// login authenticates c as [user] pass and reports whether it did. It
// replies to a failure. The guard may hold the check a while, or refuse
// it unchecked while c's address must wait after too many wrong passwords
// for that user.
func (s *Server) login(c *client, cred [][]byte) bool {
	now := s.cfg.Clock()
	user := "default"
	if len(cred) == 2 {
		user = string(cred[0])
	}
	delay, wait := s.guard.Admit(c.addr, user, now)
	if wait > 0 {
		s.refuseAuth(c, auth.BlockedReply(wait))
		return false
	}
	time.Sleep(delay) // only this connection waits: its goroutine holds nothing
	u, ok := s.users.Authenticate(cred)
	if !ok {
		s.guard.Failed(c.addr, now)
		s.wrongPass(c)
		return false
	}
	s.guard.Passed(c.addr, user)
	s.users.Login(&c.Session, u)
	return true
}

// hello is a parsed HELLO [protover [AUTH user pass] [SETNAME name]].
type hello struct {
	proto   int
	auth    [][]byte // user and pass, or nil
	setName []byte
	hasName bool
}

// cmdHello switches the protocol, authenticating and naming the client on
// the way. It replies with a map, in the protocol just chosen.
func cmdHello(s *Server, c *client, args [][]byte) {
	h, reply := parseHello(args, c.Proto)
	switch {
	case reply != "":
		c.conn.WriteError(reply)
		return
	case h.auth != nil && !s.login(c, h.auth):
		return
	case h.auth == nil && !c.Authed:
		c.conn.WriteError(errHelloNoAuth)
		return
	case h.hasName && len(h.setName) > maxClientName:
		c.conn.WriteError(errNameLong)
		return
	case h.hasName && !validName(h.setName):
		c.conn.WriteError(errClientName)
		return
	}
	c.Authed = true
	if h.hasName {
		c.setMeta(func(m *clientMeta) { m.name = string(h.setName) })
	}
	c.setResp(h.proto)
	writeMap(c, s.helloFields(c))
}

func parseHello(args [][]byte, proto int) (hello, string) {
	h := hello{proto: proto}
	if len(args) < 2 {
		return h, ""
	}
	v, ok := parseInt(args[1])
	if !ok {
		return h, errProtoNotInt
	}
	if v != 2 && v != 3 {
		return h, errNoProto
	}
	h.proto = int(v)
	return h, h.options(args[2:])
}

// options parses HELLO's AUTH and SETNAME options.
func (h *hello) options(opts [][]byte) string {
	for len(opts) > 0 {
		switch {
		case equalFoldASCII(opts[0], "auth") && len(opts) >= 3:
			h.auth, opts = opts[1:3], opts[3:]
		case equalFoldASCII(opts[0], "setname") && len(opts) >= 2:
			h.setName, h.hasName, opts = opts[1], true, opts[2:]
		default:
			return "ERR Syntax error in HELLO option '" + quoteArg(opts[0], 128) + "'"
		}
	}
	return ""
}

// helloFields are HELLO's reply, shaped as Redis's so that clients parse it.
func (s *Server) helloFields(c *client) []pair {
	return []pair{
		{"server", "redis"},
		{"version", redisVersion},
		{"proto", c.Proto},
		{"id", c.id},
		{"mode", s.mode()},
		{"role", "master"},
		{"modules", []any{}},
		{"rlstore_version", s.cfg.Version},
	}
}

// maxClientName bounds a client's name and its library's name and version:
// CLIENT LIST repeats them for every client, and 200 clients with 200 KB
// names made each CLIENT LIST 40 MB (issue 25's finding 5).
const maxClientName = 1024

// validName reports whether a client or library name is printable ASCII with
// no spaces, as Redis requires. An empty name clears it.
func validName(b []byte) bool {
	return strings.IndexFunc(string(b), func(r rune) bool { return r <= ' ' || r > '~' }) < 0
}
