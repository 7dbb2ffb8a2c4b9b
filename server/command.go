package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/observe"
	"github.com/rlstore/rlstore/server/internal/resp"
)

// command is one entry of the command table.
type command struct {
	name  string // lower case, as dispatch looks it up; "parent|sub" for a subcommand
	arity int    // Redis style: n > 0 exactly n arguments with the name, n < 0 at least -n
	flags cmdFlags
	run   func(s *Server, c *client, args [][]byte)
	subs  []command // subcommands, chosen by the second argument; run is then unused

	// Optional, for COMMAND and COMMAND DOCS. Key positions count the name
	// as 0; register sets them from the key specs of commandSpecs.
	firstKey, lastKey, keyStep int
	group, summary             string
	acl                        aclCats   // set by register: commandSpecs' and those the flags imply
	keys                       []keySpec // set by register from commandSpecs

	// follows names the command whose rename-command this one takes when
	// it has none of its own: renaming that command disables this one.
	follows string

	// What the concerns around a command must know of it beyond its flags
	// and key specs, declared here so that none of them switches on its
	// name (as Redis's struct redisCommand carries its getkeys_proc).
	peek    peekFunc    // the command made a peek, for runRefused; nil: it has none
	changes changesFunc // the keys a write may change, for recordChanges; nil: not taken back key by key
	blind   blindFunc   // its reply when no node can know the key's state (--owner-unreachable allow|deny); nil: the error
	wraps   int         // the argument naming the command this one runs for a peer (RL.HOP: 3); 0: none
	secret  secretFunc  // its arguments may be passwords or proofs: the slow log keeps its name only, and MONITOR hides what this returns; nil: none

	stats *observe.Stats // INFO commandstats; set by register, shared by a renamed command
}

// cmdFlags are Redis's command flags, in the order COMMAND INFO lists
// them, then rlstore's own. The entry sets those that change how rlstore
// runs the command; the rest come from its cmdSpec.
type cmdFlags uint32

const (
	flagWrite          cmdFlags = 1 << iota // changes state
	flagReadonly                            // reads keys and changes nothing
	flagDenyOOM                             // may add state, so refused when memory is full
	flagAdmin                               // administers the server; MONITOR does not show it
	flagPubsub                              // SUBSCRIBE and UNSUBSCRIBE
	flagNoScript                            // Redis's: not from a script
	flagLoading                             // Redis's: runs while the data set loads
	flagStale                               // Redis's: runs on a replica with stale data
	flagSkipSlowlog                         // Redis's: EXEC, whose commands are logged each
	flagFast                                // O(1) or O(log n)
	flagNoAuth                              // allowed before AUTH
	flagNoAsyncLoading                      // Redis's: not while a replica loads in the background
	flagNoTx                                // refused inside MULTI ("no_multi")
	flagAllowBusy                           // Redis's: runs while a script is busy
	redisFlagCount              = iota

	flagNoQueue      cmdFlags = 1 << (iota - 1) // runs at once even inside MULTI (MULTI, EXEC, DISCARD, QUIT, WATCH)
	flagAllKeys                                 // changes every key (FLUSHALL, FLUSHDB)
	flagBarrier                                 // runs keyed commands it does not name (EXEC's queue): under the handoff's barrier, and tracking reads its queue
	flagCacheable                               // a read whose every argument is a key: a tracking client may cache its reply
	flagPrefetch                                // its first key is prefetched when it comes pipelined (a decision on the store's key)
	flagAnnounces                               // announces the keys it changed to CLIENT TRACKING itself (the decision seam), so afterRun does not
	flagKeepsCaching                            // leaves CLIENT CACHING's yes or no for the next command (CLIENT CACHING, MULTI)
)

// peekFunc returns a decision command's arguments made into a peek, and
// whether the client asked for a peek itself; nil if it cannot peek with
// these arguments (CL.THROTTLE peeks only with quantity 0).
type peekFunc func(args [][]byte) (peek [][]byte, asked bool)

// changesFunc returns the keys a call of a write command may change, and
// the route they share if it is not each key itself (see recordChanges).
type changesFunc func(s *Server, args [][]byte) (keys [][]byte, route []byte)

// secretFunc returns the arguments of a call that MONITOR shows as
// "(redacted)"; see secretArgs, secretHelloAuth and secretNone.
type secretFunc func(args [][]byte) observe.Hidden

// blindFunc is a decision made without the key's state: admitted with
// nothing known, or denied with a wait to retry after.
type blindFunc func(allow bool) []int64

// names returns the Redis flags among f, as COMMAND INFO lists them.
func (f cmdFlags) names() flagSet {
	all := [redisFlagCount]string{"write", "readonly", "denyoom", "admin", "pubsub", "noscript", "loading",
		"stale", "skip_slowlog", "fast", "no_auth", "no_async_loading", "no_multi", "allow_busy"}
	out := flagSet{}
	for i, n := range all {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// sub returns cm's subcommand called name, ignoring case, or nil.
func (cm *command) sub(name []byte) *command {
	for i := range cm.subs {
		sc := &cm.subs[i]
		if equalFoldASCII(name, sc.name[len(cm.name)+1:]) {
			return sc
		}
	}
	return nil
}

// equalFoldASCII reports whether b equals the lower-case s, ignoring ASCII case.
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lowerASCII(b[i]) != s[i] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// client is one connection's state. The fields above mu are touched only by
// the connection's goroutine; CLIENT LIST and INFO read the rest from others.
type client struct {
	conn      clientConn  // rc, or hold wrapping it when persistence is on
	rc        *resp.Conn  // the connection
	hold      *holdConn   // conn, when persistence is on; see runWrite
	g         *resp.Guard // the socket; CLIENT KILL closes it from other goroutines
	id        int64
	resp      int // protocol version: 2 or 3
	authed    bool
	user      *auth.User    // the ACL file's user it authenticated as; nil: the default user without an ACL file
	authFails int           // wrong passwords sent, for maxAuthFailures
	errs      int64         // error replies written, for INFO commandstats' failed_calls
	mark      time.Duration // when the batch's last command ended (Server.monotonic), or 0 between batches
	created   time.Time
	addr      string
	laddr     string

	// The decision path's own state.
	wallBase int64         // unix nanoseconds at Server.monotonic 0 (cmdclock.go)
	wallAt   time.Duration // when wallBase was read (Server.monotonic)
	pend     pending       // counts not yet in the server's counters (cmdpending.go)
	scratch  []byte        // where a decision's reply is built (writeDecision)
	params   paramCache    // the last native decision's parameters (paramcache.go)
	batch    batchKeys     // the batch's keys and their hashes (prefetch.go)

	multi  bool     // inside MULTI
	dirty  bool     // a command was refused while queueing, so EXEC aborts
	queue  []queued // commands queued by MULTI
	qbytes int64    // bytes of arguments in queue

	changed bool     // ran a write command since the last commit (see commitBatch)
	changes []change // under appendfsync always: what the batch changed, to take back if its commit fails
	looked  []state  // recordChanges' scratch
	stripes []uint8  // the key locks recordChanges holds

	peer  bool               // another node of the cluster, which proved it with RL.PEER AUTH
	shake *cluster.Challenge // the handshake's RL.PEER HELLO, once it came (peerauth.go)
	hop   int                // the hop level of the forwarded request being run (hopClient if none)
	// synced says RL.PEER SYNC has come on this connection: a primary's
	// stream of shipments starts with a full sync (see peerShipment).
	synced   bool
	peerName string         // the node that proved itself with RL.PEER AUTH
	fwd      []*remoteBatch // this batch's requests for other nodes, one batch per owner, sent when it ends
	routing  routing        // whether it routes by slot, and the table it last saw (cluster_nudge.go)

	cmds    atomic.Int64            // commands run
	lastCmd atomic.Pointer[command] // the last command run
	qlen    atomic.Int32            // len(queue) inside MULTI, else -1

	mu   sync.Mutex // guards meta
	meta clientMeta

	// Client-side caching and MONITOR (tracking.go; their frames go out through resp.Conn.Push).
	track                clientTrack               // only this client's goroutine touches it
	channels             map[string]bool           // SUBSCRIBEd channels; only this client's goroutine
	trackConf            atomic.Pointer[trackConf] // nil while tracking is off
	brokenRedir          atomic.Bool               // its redirect target has gone
	subscribedInvalidate atomic.Bool               // subscribed to __redis__:invalidate
	subCount             atomic.Int64              // channels subscribed, for CLIENT LIST
	monitoring           atomic.Bool               // said MONITOR, for CLIENT LIST
}

// clientMeta is what a client says about itself, for CLIENT LIST.
type clientMeta struct {
	name, libName, libVer string
	resp                  int
}

// queued is a command that MULTI queued for EXEC.
type queued struct {
	cmd  *command
	args [][]byte // a copy: a command's own arguments point into the read buffer
}

func (c *client) getMeta() clientMeta {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta
}

func (c *client) setMeta(f func(m *clientMeta)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.meta)
}

// setResp switches the protocol version replies use.
func (c *client) setResp(v int) {
	c.resp = v
	c.setMeta(func(m *clientMeta) { m.resp = v })
}

// closeAfterReply closes c once the replies written so far are sent. The
// rest of its pipeline is dropped unread. The batch is committed first: a
// decision earlier in the pipeline must not be acknowledged before it is
// durable.
func (s *Server) closeAfterReply(c *client) {
	c.conn.ReadPipeline()
	if s.cfg.Durability != nil {
		s.commitBatch(c)
	}
	_ = c.conn.Close()
}

// clientConn is what commands write replies through: the connection
// itself, or a holdConn wrapping it.
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
	c    *client
	info *infoExtra // errorstats
}

func (e errCounter) WriteError(msg string) {
	e.c.errs++
	if e.info != nil {
		e.info.countError(msg)
	}
	e.clientConn.WriteError(msg)
}
