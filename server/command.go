package server

import (
	"strings"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/durable"
	"github.com/rlstore/rlstore/server/internal/introspect"
	"github.com/rlstore/rlstore/server/internal/keyspace"
	"github.com/rlstore/rlstore/server/internal/observe"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/rlstore/rlstore/window"
)

// command is how the server declares a table entry: register makes each
// into a core.Command. Its run takes the Server and the server's client,
// the form of the commands that have not moved into a package of their
// own yet (register adapts it to core.RunFunc); the attributes are
// core.Command's, documented there.
type command struct {
	name  string // lower case; the subcommand's own name within subs
	arity int
	flags core.Flags
	run   func(s *Server, c *client, args [][]byte)
	subs  []command

	firstKey, lastKey, keyStep int
	group, summary             string
	acl                        core.Cats
	keys                       []core.KeySpec

	follows string

	peek    core.PeekFunc
	changes changesFunc // the server's form of core.ChangesFunc
	blind   core.BlindFunc
	wraps   int
	secret  core.SecretFunc
}

// rlSince is the rlstore version that has every RL command as documented.
const rlSince = introspect.RLSince

// commandDocs is every command's COMMAND DOCS entry: introspect's and the
// cluster's.
func commandDocs() map[string]introspect.Doc {
	docs := introspect.Docs()
	for name, d := range route.Docs(rlSince) {
		docs[name] = introspect.Doc{Since: d.Since, Summary: d.Summary, Args: d.Args}
	}
	return docs
}

// changesFunc returns the keys a call of a write command may change, and
// the route they share if it is not each key itself (see durable.Writes.Run).
type changesFunc func(s *Server, args [][]byte) (keys [][]byte, route []byte)

// equalFoldASCII reports whether b equals the lower-case s, ignoring ASCII case.
func equalFoldASCII(b []byte, s string) bool { return core.EqualFold(b, s) }

// client is the state each concern keeps of one connection, until each
// holds its own in a slot of the session: who the connection is, and what
// the pipeline and CLIENT LIST need, is its core.Session's (the
// connected sessions are s.clients, a core.Registry). Only the
// connection's goroutine touches these fields.
type client struct {
	core.Session // the client is its session's slot

	conn    clientConn    // Session.Conn, or durable's Hold wrapping it when persistence is on (Session.Out is the same)
	errs    int64         // error replies written, for INFO commandstats' failed_calls
	running *core.Command // the command being run (Server.run), for recoverPanic to record

	g *resp.Guard // the socket, Session.Conn's Guard, which every batch stamps (readAt) without the extra load; region.go reads it too

	// The decision path's own state.
	// (Session's WallBase, WallAt and Scratch are the decision path's too.)
	pend observe.Pending // command runs not yet in their counters (flushPending)
	dec  decide.Conn     // the decision commands' state (decide.Decisions.Open)

	dur durable.Batch // the batch as the durability sees it (durable.Writes.Run); only durable reaches its fields

	rt route.Conn // the router's state (route.Router.Open); only route reaches its fields

	// Client-side caching and MONITOR (package observe; their frames go
	// out through resp.Conn.Push). Only observe reaches its fields.
	ob observe.Client
}

// setResp switches the protocol version replies use.
func (c *client) setResp(v int) {
	c.Proto = v
	c.ob.SetProto(v)
	c.SetMeta(func(m *core.Meta) { m.Resp = v })
}

// closeAfterReply closes c once the replies written so far are sent. The
// rest of its pipeline is dropped unread. The batch is committed first: a
// decision earlier in the pipeline must not be acknowledged before it is
// durable.
func (s *Server) closeAfterReply(c *client) {
	c.conn.ReadPipeline()
	if s.cfg.Durability != nil {
		s.dur.Commit(&c.dur)
	}
	_ = c.conn.Close()
}

// clientConn is what commands write replies through: the connection
// itself, or a durable.Hold wrapping it.
type clientConn interface {
	resp.Writer
	Close() error
	PeekPipeline() [][]byte
	ReadPipeline() [][]byte
}

var _ clientConn = (*resp.Conn)(nil)

// errCounter is a client's connection as commands write to it: it counts
// the error replies, so that INFO commandstats can tell failed calls.
type errCounter struct {
	clientConn
	c     *client
	stats *observe.Errors // errorstats
}

func (e errCounter) WriteError(msg string) {
	e.c.errs++
	if e.stats != nil {
		e.stats.Count(msg)
	}
	e.clientConn.WriteError(msg)
}

// later reserves the place of the reply to the command c is running; see
// resp.Later. Under appendfsync always the replies before it may be held
// until the batch's commit (see durable.Writes.Run): the batch so far is
// committed first, so that they go out ahead of the Later's.
func (s *Server) later(c *client) *resp.Later {
	if c.dur.Holding() {
		c.Conn.SetBatchEnd(true) // Commit commits only at a batch's end
		s.dur.Commit(&c.dur)
		c.Conn.SetBatchEnd(false)
	}
	return c.Conn.Later()
}

// observeDelegate is the server as tracking's observe.Delegate.
type observeDelegate struct{ s *Server }

func (d observeDelegate) Lookup(key []byte, now int64) (int64, bool) {
	_, exp, live := d.s.lookup(key, now)
	return exp, live
}

func (d observeDelegate) UnixNano() int64 { return d.s.unixNano() }
func (d observeDelegate) Clustered() bool { return d.s.ho != nil }

// writeHelp replies to a HELP subcommand with one line per subcommand.
func writeHelp(c *client, cm command) {
	c.conn.WriteArray(len(cm.subs))
	for _, sc := range cm.subs {
		c.conn.WriteString(strings.ToUpper(sc.name) + ": " + sc.summary)
	}
}

// lookup returns the algorithm of key's state and when it expires, or false
// if the key does not exist or its state has expired by now (keyspace.Lookup).
func (s *Server) lookup(key []byte, now int64) (window.Kind, int64, bool) {
	return keyspace.Lookup(s.cfg.Store, key, now)
}

// registerKeyspace registers the key commands (package keyspace), once
// the regions are attached: DEL and FLUSHALL drop their state of a key.
func (s *Server) registerKeyspace() {
	cfg := keyspace.Config{Store: s.cfg.Store, Now: s.unixNano, Flush: s.flushAll, Clustered: s.ho != nil,
		Hits: &s.info.hits, Misses: &s.info.misses}
	if s.reg != nil {
		cfg.Forget, cfg.ForgetAll = s.reg.Forget, s.reg.ForgetAll // server/internal/global
	}
	for _, cm := range keyspace.New(cfg).Commands() {
		s.table.Register(cm, nil)
	}
}

// flushAll deletes every key, through the log when there is one.
func (s *Server) flushAll() error {
	switch {
	case s.cfg.Durability != nil:
		return s.cfg.Durability.Flush()
	case s.repl != nil:
		s.repl.Feed().Flush(s.cfg.Store.Flush) // the backups hear of it in order
		return nil
	}
	s.cfg.Store.Flush()
	return nil
}
