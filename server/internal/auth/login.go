package auth

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// Replies of AUTH and HELLO, in Redis's words.
const (
	ErrWrongPass   = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassSet   = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errHelloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errNoProto     = "NOPROTO unsupported protocol version"
	errProtoNotInt = "ERR Protocol version is not an integer or out of range"
	errSyntax      = "ERR syntax error"
)

// Front is what AUTH and HELLO ask of the server they run in, set once
// with Serve (memberlist's Config and delegates).
type Front interface {
	// CloseAfterReply closes x's connection once its replies so far are sent.
	CloseAfterReply(x *core.Session)
	// Hello applies a HELLO that passed: the protocol x's replies use now,
	// and its name if it gave one (CLIENT LIST shows both). It returns
	// x's client id and the server's mode and version, for the reply.
	Hello(x *core.Session, proto int, name []byte, hasName bool) (id int64, mode, version string)
}

// LoginConfig is what AUTH and HELLO need beside the users.
type LoginConfig struct {
	Front  Front
	Guard  *Guard           // nil when off
	Clock  func() time.Time // the guard's clock
	Logger *slog.Logger
}

// logins is Users' state for AUTH and HELLO.
type logins struct {
	LoginConfig
	failures atomic.Int64 // AUTH, HELLO AUTH and RL.PEER AUTH refused
}

// Serve sets what AUTH and HELLO need, once at start.
func (u *Users) Serve(cfg LoginConfig) { u.login.LoginConfig = cfg }

// Failures is how many wrong passwords (AUTH, HELLO AUTH, RL.PEER AUTH)
// were refused, for /metrics.
func (u *Users) Failures() int64 { return u.login.failures.Load() }

// CountFailure counts a refused password that Users did not check itself.
func (u *Users) CountFailure() { u.login.failures.Add(1) }

// LoginCommands are AUTH and HELLO.
func (u *Users) LoginCommands() []core.Command {
	return []core.Command{
		{Name: "auth", Arity: -2, Flags: core.FlagNoAuth, Run: u.auth, Secret: core.HideArgs, Group: "connection", Summary: "Authenticates the connection"},
		{Name: "hello", Arity: -1, Flags: core.FlagNoAuth, Run: u.hello, Secret: secretHelloAuth, Group: "connection", Summary: "Handshakes: protocol version, AUTH and SETNAME"},
	}
}

// secretHelloAuth hides the user and password of HELLO's AUTH, as Redis 7 does.
func secretHelloAuth(args [][]byte) core.Hidden {
	for i := 2; i+2 < len(args); i++ {
		if core.EqualFold(args[i], "auth") {
			return core.Hidden{From: i + 1, To: i + 3}
		}
	}
	return core.Hidden{}
}

// auth is AUTH [user] pass. Without an ACL file the only user is
// "default", as in a Redis without ACLs; it needs no password unless
// requirepass is set.
func (u *Users) auth(x *core.Session, args [][]byte) {
	if len(args) > 3 {
		x.Out.WriteError(errSyntax)
		return
	}
	if len(args) == 2 && u.ACL() == nil && u.RequirePass() == "" {
		x.Out.WriteError(errNoPassSet)
		return
	}
	if u.login1(x, args[1:]) {
		x.Out.WriteString("OK")
	}
}

// MaxAuthFailures is how many wrong passwords a connection that has not
// authenticated may send before it is closed, so that one connection cannot
// pipeline guesses by the hundred thousand. A client with the wrong password
// configured fails on its first try anyway.
const MaxAuthFailures = 5

// WrongPass refuses a wrong password, and closes a connection that has not
// authenticated once it has sent MaxAuthFailures of them.
func (u *Users) WrongPass(x *core.Session) { u.refuse(x, ErrWrongPass) }

func (u *Users) refuse(x *core.Session, reply string) {
	u.login.failures.Add(1)
	x.Out.WriteError(reply)
	c := u.conn(x)
	if c.fails++; c.fails >= MaxAuthFailures && !x.Authed {
		u.login.Logger.Debug("closing a client after repeated wrong passwords", "addr", c.Addr, "failures", c.fails)
		u.login.Front.CloseAfterReply(x)
	}
}

// conn is x's state in Users' slot.
func (u *Users) conn(x *core.Session) *Conn {
	c := u.slot.Get(x)
	if c == nil {
		c = &Conn{}
		u.slot.Set(x, c)
	}
	return c
}

// login1 authenticates x as [user] pass and reports whether it did. It
// replies to a failure. The guard may hold the check a while, or refuse
// it unchecked while x's address must wait after too many wrong passwords
// for that user.
func (u *Users) login1(x *core.Session, cred [][]byte) bool {
	now := u.login.Clock()
	user := "default"
	if len(cred) == 2 {
		user = string(cred[0])
	}
	addr := u.conn(x).Addr
	delay, wait := u.login.Guard.Admit(addr, user, now)
	if wait > 0 {
		u.refuse(x, BlockedReply(wait))
		return false
	}
	time.Sleep(delay) // only this connection waits: its goroutine holds nothing
	usr, ok := u.Authenticate(cred)
	if !ok {
		u.login.Guard.Failed(addr, now)
		u.WrongPass(x)
		return false
	}
	u.login.Guard.Passed(addr, user)
	u.Login(x, usr)
	return true
}

// helloArgs is a parsed HELLO [protover [AUTH user pass] [SETNAME name]].
type helloArgs struct {
	proto   int
	auth    [][]byte // user and pass, or nil
	setName []byte
	hasName bool
}

// hello switches the protocol, authenticating and naming the client on
// the way. It replies with a map, in the protocol just chosen.
func (u *Users) hello(x *core.Session, args [][]byte) {
	h, reply := parseHello(args, x.Proto)
	switch {
	case reply != "":
		x.Out.WriteError(reply)
		return
	case h.auth != nil && !u.login1(x, h.auth):
		return
	case h.auth == nil && !x.Authed:
		x.Out.WriteError(errHelloNoAuth)
		return
	case h.hasName && len(h.setName) > core.MaxClientName:
		x.Out.WriteError(core.ErrNameLong)
		return
	case h.hasName && !core.ValidName(h.setName):
		x.Out.WriteError(core.ErrClientName)
		return
	}
	x.Authed = true
	id, mode, version := u.login.Front.Hello(x, h.proto, h.setName, h.hasName)
	writeHello(x, id, mode, version)
}

// writeHello is HELLO's reply, shaped as Redis's so that clients parse it.
func writeHello(x *core.Session, id int64, mode, version string) {
	x.WriteMapLen(8)
	for _, kv := range [...]struct{ k, v string }{{"server", "redis"}, {"version", RedisVersion}} {
		x.Out.WriteBulkString(kv.k)
		x.Out.WriteBulkString(kv.v)
	}
	x.Out.WriteBulkString("proto")
	x.Out.WriteInt(x.Proto)
	x.Out.WriteBulkString("id")
	x.Out.WriteInt64(id)
	x.Out.WriteBulkString("mode")
	x.Out.WriteBulkString(mode)
	x.Out.WriteBulkString("role")
	x.Out.WriteBulkString("master")
	x.Out.WriteBulkString("modules")
	x.Out.WriteArray(0)
	x.Out.WriteBulkString("rlstore_version")
	x.Out.WriteBulkString(version)
}

// RedisVersion is the Redis version rlstore answers as. Clients read it to
// decide what they may send; rlstore speaks what Redis 7.0 clients send.
const RedisVersion = "7.0.0"

func parseHello(args [][]byte, proto int) (helloArgs, string) {
	h := helloArgs{proto: proto}
	if len(args) < 2 {
		return h, ""
	}
	v, ok := policy.ParseInt(args[1])
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
func (h *helloArgs) options(opts [][]byte) string {
	for len(opts) > 0 {
		switch {
		case core.EqualFold(opts[0], "auth") && len(opts) >= 3:
			h.auth, opts = opts[1:3], opts[3:]
		case core.EqualFold(opts[0], "setname") && len(opts) >= 2:
			h.setName, h.hasName, opts = opts[1], true, opts[2:]
		default:
			return "ERR Syntax error in HELLO option '" + core.QuoteArg(opts[0], 128) + "'"
		}
	}
	return ""
}
