package server

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/introspect"
)

// Replies of CLIENT, in Redis's words.
const (
	errNoClient = "ERR No such client"
	errClientID = "ERR client-id should be greater than 0"
)

// clientCommands is CLIENT and its subcommands.
func clientCommands() []command {
	return []command{{name: "client", arity: -2, group: "connection", summary: "Manages client connections", subs: []command{
		{name: "id", arity: 2, run: cmdClientID, summary: "Returns the connection's id"},
		{name: "setname", arity: 3, run: cmdClientSetName, summary: "Names the connection"},
		{name: "getname", arity: 2, run: cmdClientGetName, summary: "Returns the connection's name"},
		{name: "setinfo", arity: 4, run: cmdClientSetInfo, summary: "Records the client library's name or version"},
		{name: "info", arity: 2, run: cmdClientInfo, summary: "Describes this connection"},
		{name: "list", arity: -2, flags: flagAdmin, run: cmdClientList, summary: "Describes every connection"},
		{name: "kill", arity: -3, flags: flagAdmin, run: cmdClientKill, summary: "Closes connections"},
		{name: "help", arity: 2, run: cmdClientHelp, summary: "Lists CLIENT's subcommands"},
	}}}
}

// registerClient registers CLIENT: its subcommands above, then observe's
// for client-side caching.
func (s *Server) registerClient() {
	cmds := clientCommands()
	specs := introspect.Specs()
	cm := s.entry(&cmds[0])
	cm.Subs = append(cm.Subs, s.obs.TrackingCommands()...)
	s.table.Register(cm, func(name string) core.Spec { return specs[name] })
	s.clientCmd = s.table.Lookup(cm.Name)
	s.keepRuns(&cmds[0], s.clientCmd)
}

func cmdClientID(s *Server, c *client, args [][]byte) { c.conn.WriteInt64(c.id) }

func cmdClientSetName(s *Server, c *client, args [][]byte) {
	if len(args[2]) > core.MaxClientName {
		c.conn.WriteError(core.ErrNameLong)
		return
	}
	if !core.ValidName(args[2]) {
		c.conn.WriteError(core.ErrClientName)
		return
	}
	c.setMeta(func(m *clientMeta) { m.name = string(args[2]) })
	c.conn.WriteString("OK")
}

func cmdClientGetName(s *Server, c *client, args [][]byte) {
	if name := c.getMeta().name; name != "" {
		c.conn.WriteBulkString(name)
		return
	}
	c.Null()
}

// cmdClientSetInfo is CLIENT SETINFO LIB-NAME|LIB-VER value, which go-redis sends on connect.
func cmdClientSetInfo(s *Server, c *client, args [][]byte) {
	attr, val := args[2], string(args[3])
	switch {
	case !equalFoldASCII(attr, "lib-name") && !equalFoldASCII(attr, "lib-ver"):
		c.conn.WriteError("ERR Unrecognized option '" + core.QuoteArg(attr, 128) + "'")
	case len(val) > core.MaxClientName:
		c.conn.WriteError(core.ErrNameLong)
	case !core.ValidName(args[3]):
		c.conn.WriteError("ERR " + strings.ToLower(string(attr)) + " cannot contain spaces, newlines or special characters.")
	default:
		c.setMeta(func(m *clientMeta) {
			if equalFoldASCII(attr, "lib-name") {
				m.libName = val
			} else {
				m.libVer = val
			}
		})
		c.conn.WriteString("OK")
	}
}

func cmdClientInfo(s *Server, c *client, args [][]byte) {
	c.conn.WriteBulkString(c.describe(time.Now(), args))
}

// cmdClientList is CLIENT LIST [TYPE normal] [ID id …], one line per client, oldest first.
func cmdClientList(s *Server, c *client, args [][]byte) {
	ids, reply := parseListFilter(args[2:])
	if reply != "" {
		c.conn.WriteError(reply)
		return
	}
	var b strings.Builder
	now := time.Now()
	for _, o := range s.clientList() {
		if ids == nil || ids[o.id] {
			b.WriteString(o.describe(now, ifSelf(o, c, args)))
		}
	}
	c.conn.WriteBulkString(b.String())
}

func parseListFilter(opts [][]byte) (map[int64]bool, string) {
	switch {
	case len(opts) == 0:
		return nil, ""
	case len(opts) == 2 && equalFoldASCII(opts[0], "type"):
		if equalFoldASCII(opts[1], "normal") {
			return nil, ""
		}
		return map[int64]bool{}, "" // there are no replicas or pubsub clients
	case len(opts) >= 2 && equalFoldASCII(opts[0], "id"):
		ids := map[int64]bool{}
		for _, a := range opts[1:] {
			id, ok := parseInt(a)
			if !ok || id < 1 {
				return nil, "ERR Invalid client ID"
			}
			ids[id] = true
		}
		return ids, ""
	}
	return nil, errSyntax
}

// clientList returns the connected clients in the order they connected.
func (s *Server) clientList() []*client {
	s.mu.Lock()
	list := make([]*client, 0, len(s.clients))
	for _, o := range s.clients {
		if !o.g.Closed() { // killed: gone for CLIENT LIST and KILL at once, as in Redis, though its goroutine may not have ended
			list = append(list, o)
		}
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	return list
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(max(d, 0)/time.Second), 10) }

func cmdClientHelp(s *Server, c *client, args [][]byte) { core.WriteHelp(&c.Session, s.clientCmd) }

// writeHelp replies to a HELP subcommand with one line per subcommand.
func writeHelp(c *client, cm command) {
	c.conn.WriteArray(len(cm.subs))
	for _, sc := range cm.subs {
		c.conn.WriteString(strings.ToUpper(sc.name) + ": " + sc.summary)
	}
}
