package clientcmd

import (
	"strings"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// Replies of CLIENT, in Redis's words.
const (
	errNoClient = "ERR No such client"
	errClientID = "ERR client-id should be greater than 0"
	errSyntax   = "ERR syntax error"
)

// Delegate is what CLIENT needs of the server beyond the sessions, set
// once at New (memberlist's Config + delegates).
type Delegate interface {
	// Tracking returns client-side caching's and MONITOR's part of x's
	// line: the channels it subscribed, where its invalidations go (or
	// 0), and its flags beyond MULTI's x. Any goroutine may ask.
	Tracking(x *core.Session) (sub, redir int64, flags string)
	// CloseAfterReply closes x's connection once the replies written so
	// far are sent.
	CloseAfterReply(x *core.Session)
}

// Clients is CLIENT over the server's connections.
type Clients struct {
	reg   *core.Registry
	d     Delegate
	entry *core.Command // CLIENT as registered, for HELP: its subcommands are these and observe's
}

// New returns CLIENT over reg's sessions.
func New(reg *core.Registry, d Delegate) *Clients { return &Clients{reg: reg, d: d} }

// Command is CLIENT with its own subcommands, as a table entry; the server
// appends observe's (client-side caching) before registering it, then
// hands the registered entry to Registered.
func (cl *Clients) Command() core.Command {
	return core.Command{Name: "client", Arity: -2, Group: "connection", Summary: "Manages client connections", Subs: []core.Command{
		{Name: "id", Arity: 2, Run: cl.id, Summary: "Returns the connection's id"},
		{Name: "setname", Arity: 3, Run: cl.setName, Summary: "Names the connection"},
		{Name: "getname", Arity: 2, Run: cl.getName, Summary: "Returns the connection's name"},
		{Name: "setinfo", Arity: 4, Run: cl.setInfo, Summary: "Records the client library's name or version"},
		{Name: "info", Arity: 2, Run: cl.info, Summary: "Describes this connection"},
		{Name: "list", Arity: -2, Flags: core.FlagAdmin, Run: cl.list, Summary: "Describes every connection"},
		{Name: "kill", Arity: -3, Flags: core.FlagAdmin, Run: cl.kill, Summary: "Closes connections"},
		{Name: "help", Arity: 2, Run: cl.help, Summary: "Lists CLIENT's subcommands"},
	}}
}

// Registered notes CLIENT's entry as the table holds it, for CLIENT HELP.
func (cl *Clients) Registered(cm *core.Command) { cl.entry = cm }

func (cl *Clients) id(x *core.Session, args [][]byte) { x.Out.WriteInt64(x.ID) }

func (cl *Clients) setName(x *core.Session, args [][]byte) {
	if len(args[2]) > core.MaxClientName {
		x.Out.WriteError(core.ErrNameLong)
		return
	}
	if !core.ValidName(args[2]) {
		x.Out.WriteError(core.ErrClientName)
		return
	}
	x.SetMeta(func(m *core.Meta) { m.Name = string(args[2]) })
	x.Out.WriteString("OK")
}

func (cl *Clients) getName(x *core.Session, args [][]byte) {
	if name := x.Meta().Name; name != "" {
		x.Out.WriteBulkString(name)
		return
	}
	x.Null()
}

// setInfo is CLIENT SETINFO LIB-NAME|LIB-VER value, which go-redis sends on connect.
func (cl *Clients) setInfo(x *core.Session, args [][]byte) {
	attr, val := args[2], string(args[3])
	switch {
	case !core.EqualFold(attr, "lib-name") && !core.EqualFold(attr, "lib-ver"):
		x.Out.WriteError("ERR Unrecognized option '" + core.QuoteArg(attr, 128) + "'")
	case len(val) > core.MaxClientName:
		x.Out.WriteError(core.ErrNameLong)
	case !core.ValidName(args[3]):
		x.Out.WriteError("ERR " + strings.ToLower(string(attr)) + " cannot contain spaces, newlines or special characters.")
	default:
		x.SetMeta(func(m *core.Meta) {
			if core.EqualFold(attr, "lib-name") {
				m.LibName = val
			} else {
				m.LibVer = val
			}
		})
		x.Out.WriteString("OK")
	}
}

func (cl *Clients) info(x *core.Session, args [][]byte) {
	x.Out.WriteBulkString(cl.infoOf(x).Line(time.Now(), args, x.QBytes))
}

// list is CLIENT LIST [TYPE normal] [ID id …], one line per client, oldest first.
func (cl *Clients) list(x *core.Session, args [][]byte) {
	ids, reply := parseListFilter(args[2:])
	if reply != "" {
		x.Out.WriteError(reply)
		return
	}
	var b strings.Builder
	now := time.Now()
	for _, o := range cl.listed() {
		if ids == nil || ids[o.info.ID] {
			if o.Session == x {
				b.WriteString(o.info.Line(now, args, x.QBytes))
			} else {
				b.WriteString(o.info.Line(now, nil, 0))
			}
		}
	}
	x.Out.WriteBulkString(b.String())
}

func parseListFilter(opts [][]byte) (map[int64]bool, string) {
	switch {
	case len(opts) == 0:
		return nil, ""
	case len(opts) == 2 && core.EqualFold(opts[0], "type"):
		if core.EqualFold(opts[1], "normal") {
			return nil, ""
		}
		return map[int64]bool{}, "" // there are no replicas or pubsub clients
	case len(opts) >= 2 && core.EqualFold(opts[0], "id"):
		ids := map[int64]bool{}
		for _, a := range opts[1:] {
			id, ok := policy.ParseInt(a)
			if !ok || id < 1 {
				return nil, "ERR Invalid client ID"
			}
			ids[id] = true
		}
		return ids, ""
	}
	return nil, errSyntax
}

// listed is a session with what it showed when listed.
type listed struct {
	*core.Session
	info Info
}

// listed returns the sessions not yet killed in the order they
// connected, each with its Info.
func (cl *Clients) listed() []listed {
	xs := cl.reg.List()
	list := make([]listed, len(xs))
	for i, o := range xs {
		list[i] = listed{o, cl.infoOf(o)}
	}
	return list
}

// infoOf returns what CLIENT INFO and LIST show of x, now.
func (cl *Clients) infoOf(x *core.Session) Info {
	cmd := ""
	if cm := x.LastCmd.Load(); cm != nil {
		cmd = cm.Name
	}
	g := x.Conn.Guard()
	sub, redir, flags := cl.d.Tracking(x)
	return Info{ID: x.ID, Addr: x.Addr, LAddr: x.LAddr, FD: FD(g.Conn), Meta: x.Meta(),
		Created: x.Created, LastRead: time.Unix(0, g.Last.Load()), Cmd: cmd, Multi: int(x.QLen.Load()),
		OMem: x.Conn.PushesHeld(), Sub: sub, Redir: redir, Flags: flags}
}

func (cl *Clients) help(x *core.Session, args [][]byte) { core.WriteHelp(x, cl.entry) }
