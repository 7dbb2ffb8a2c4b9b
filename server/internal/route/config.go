package route

import (
	"log/slog"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
)

// Config is what a Router needs of the server it runs in, set once at New
// (memberlist's Config and delegates are the model).
type Config struct {
	// Cluster is the node's cluster options; nil: one node, where the
	// cluster commands answer that cluster support is disabled and RL.PEER
	// serves the regions' handshake only.
	Cluster *ClusterConfig
	Started time.Time // the server's monotonic origin: a command's Session.Mark is the time since it

	Pipeline *core.Pipeline // RL.HOP runs the request it wraps through it
	Table    *core.Table    // EXEC's frame for a forwarded transaction
	Slots    *core.Slots    // where the router keeps its Conn in each session
	Store    *shard.Map     // the store the node serves
	Logger   *slog.Logger
	Clock    func() time.Time // the server's clock (the handshake's guard)
	UnixNano func() int64     // the commands' time, in unix nanoseconds

	Runner   Runner   // runs a command here
	Conns    Conns    // what the router asks of a client's connection
	Gate     Gate     // the handshake's brute-force guard and login
	Keys     Keys     // whether a key is live, for the slot listings
	Regions  Regions  // the regions' side of RL.PEER; required
	Policies Policies // applies the policy changes other nodes made; required with Cluster
}

// Runner runs a command on this node.
type Runner interface {
	// Run runs cm as the pipeline does: counted, timed, and a write under
	// the durability's rules (core.Runner).
	Run(x *core.Session, cm *core.Command, args [][]byte)
	// Call runs cm alone, uncounted: RL.HOP, whose wrapped command is the
	// one counted.
	Call(x *core.Session, cm *core.Command, args [][]byte)
}

// Conns is what the router asks of a client's connection beyond its session.
type Conns interface {
	// Holding reports whether x's replies are held for a commit
	// (appendfsync always): a forward's reply then waits for its owner
	// instead of completing later.
	Holding(x *core.Session) bool
	// CloseAfterReply closes x's connection once the replies written so
	// far are sent.
	CloseAfterReply(x *core.Session)
}

// Gate is the brute-force guard the handshake counts its tries against, as
// a user of its own at the client's address, and the login of a peer.
type Gate interface {
	// Blocked returns the reply refusing a handshake from addr unchecked,
	// or "".
	Blocked(addr string, now time.Time) string
	// Admit returns the reply refusing addr's proof unchecked, or "".
	Admit(addr string, now time.Time) string
	Failed(addr string, now time.Time) // a wrong proof counts toward the limits
	Passed(addr string)
	CountFailure() // INFO's rejected authentications
	// Login makes x a peer's session: no user, as the node that accepted
	// a forwarded request checked its client's rights already.
	Login(x *core.Session)
}

// Keys says whether a key holds live state.
type Keys interface {
	Live(key []byte, now int64) bool
}

// Regions is the regions' side of RL.PEER (server/internal/global).
type Regions interface {
	// Regional reports whether the server is a region of several.
	Regional() bool
	// PeerRegion answers RL.PEER REGION payload on a peer's connection.
	PeerRegion(x *core.Session, payload []byte)
	// Keys are the keys a region's peer handshake may prove.
	Keys() [][]byte
}

// Policies applies a policy change another node made (see policy.go).
type Policies interface {
	// ApplyRemote makes the change here, durable as a local one, while
	// current still reports it as the version recorded for its policy.
	ApplyRemote(name, def string, deleted bool, current func() bool)
}
