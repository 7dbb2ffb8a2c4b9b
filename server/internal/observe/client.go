package observe

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/resp"
)

// Delegate is what tracking asks of the server it runs in, set once at
// NewObservers (memberlist's Config and delegates).
type Delegate interface {
	// Lookup returns when key's state expires (unix nanoseconds) and
	// whether it is live at now.
	Lookup(key []byte, now int64) (exp int64, live bool)
	UnixNano() int64 // the server's clock
	Clustered() bool // another node may answer an EXEC's reads
}

// NewObservers returns the registry of tracking clients and monitors over
// d, with its per-connection slot from slots; a redirect's target is found
// among clients' sessions.
func NewObservers(d Delegate, clients *core.Registry, slots *core.Slots) *Observers {
	return &Observers{d: d, clients: clients, slot: core.NewSlot[Client](slots)}
}

// byID returns the connected client with id, or nil.
func (o *Observers) byID(id int64) *Client {
	if x := o.clients.Get(id); x != nil {
		return o.slot.Get(x)
	}
	return nil
}

// Active reports whether any client is tracking or monitoring: the hooks
// around a command run only then.
func (o *Observers) Active() bool { return o.active.Load() != 0 }

// Watchers is the count Active reads, for a hook that must cost no more
// than Active while nobody watches but may not import observe: the
// decision seam's (decide.Tracker). Read it only.
func (o *Observers) Watchers() *atomic.Int32 { return &o.active }

// Changed tells the clients tracking key that x's command changed it (x
// is nil for a change no local client made), while anyone tracks or
// monitors: a decision's (decide.Tracker).
func (o *Observers) Changed(x *core.Session, key []byte) {
	if !o.Active() {
		return
	}
	var w *Client
	if x != nil {
		w = o.slot.Get(x)
	}
	o.Invalidate(w, key)
}

// Count is how many clients are tracking plus how many are monitoring.
func (o *Observers) Count() int { return int(o.active.Load()) }

// Client is one connection as CLIENT TRACKING and MONITOR see it. The
// server keeps it in its client by value, so a command's hooks reach it
// without a slot's type assertion; only observe reaches its fields, and its
// commands find it in observe's slot of the session. The fields without
// atomics are touched only by the connection's goroutine.
type Client struct {
	id    int64
	addr  string
	rc    *resp.Conn
	x     *core.Session
	proto atomic.Int32 // the protocol, as other goroutines read it (SetProto)

	track                clientTrack               // only this client's goroutine touches it
	channels             map[string]bool           // SUBSCRIBEd channels; only this client's goroutine
	trackConf            atomic.Pointer[trackConf] // nil while tracking is off
	brokenRedir          atomic.Bool               // its redirect target has gone
	subscribedInvalidate atomic.Bool               // subscribed to __redis__:invalidate
	subCount             atomic.Int64              // channels subscribed, for CLIENT LIST
	monitoring           atomic.Bool               // said MONITOR, for CLIENT LIST
}

// Open makes c the state of a connection: x its session, rc its
// connection, id and addr the client's.
func (o *Observers) Open(c *Client, x *core.Session, rc *resp.Conn, id int64, addr string) {
	c.id, c.addr, c.rc, c.x = id, addr, rc, x
	c.proto.Store(int32(x.Proto))
	o.slot.Set(x, c)
}

// SetProto notes the protocol the client's replies use (HELLO), for the
// invalidations other goroutines send it.
func (c *Client) SetProto(v int) { c.proto.Store(int32(v)) }

// SetInExec says whether EXEC is running its queue: the caching flag lasts
// the whole EXEC, and pushes wait for its reply's end.
func (c *Client) SetInExec(on bool) { c.track.inExec = on }

// Subscribed is how many channels the client subscribed to, for CLIENT LIST.
func (c *Client) Subscribed() int64 { return c.subCount.Load() }

// Flags are CLIENT LIST's letters of tracking and MONITOR: t tracking, B
// broadcast tracking, R broken redirect, P subscribed, O monitor.
func (c *Client) Flags() string {
	f := ""
	if conf := c.trackConf.Load(); conf != nil {
		f += "t"
		if conf.bcast {
			f += "B"
		}
		if c.brokenRedir.Load() {
			f += "R"
		}
	}
	if c.subCount.Load() > 0 {
		f += "P"
	}
	if c.monitoring.Load() {
		f += "O"
	}
	return f
}
