package observe

import (
	"bytes"
	"container/heap"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// maxTrackedKeys bounds the keys the server remembers clients read, as
// Redis's tracking-table-max-keys does (with its default): past it, a key is
// dropped from the table after its readers are sent an invalidation.
const maxTrackedKeys = 1 << 20

// Observers is the server's side of client-side caching (CLIENT TRACKING)
// and of MONITOR. Its hooks run around every command, but only while
// active is not zero: with nobody tracking or monitoring, a command pays one
// atomic load before it runs and one after.
type Observers struct {
	d       Delegate
	clients *core.Registry    // the connected sessions, where a redirect's target is found
	slot    core.Slot[Client] // each session's Client, for the commands
	active  atomic.Int32      // clients tracking plus clients monitoring

	mu       sync.Mutex             // guards the fields below
	keys     map[string]*trackedKey // default mode: keys clients read, until they change
	trackers map[int64]*Client      // clients with tracking on
	bcast    map[int64]*Client      // of those, the ones in BCAST mode
	monitors map[int64]*Client      // clients that said MONITOR
	watched  map[string]struct{}    // BCAST mode: keys written under a broadcast prefix, each with one entry in expiries
	expiries expiryHeap             // when tracked and watched keys expire, earliest first
	timer    *time.Timer            // fires at the earliest expiry; nil until one is tracked
	timerAt  int64                  // unix nanoseconds the timer is set for, 0 if none
}

// trackedKey is a key some clients read while tracking, and its expiry then.
type trackedKey struct {
	readers map[int64]struct{}
	expiry  int64 // unix nanoseconds; 0 if it did not exist
}

// trackConf is a client's CLIENT TRACKING settings. It is replaced whole,
// never changed, so other goroutines may read it through client.trackConf.
type trackConf struct {
	bcast, optin, optout, noloop bool
	redirect                     int64 // client id, or 0
	prefixes                     [][]byte
}

// clientTrack is a client's tracking state that only its own goroutine touches.
type clientTrack struct {
	caching int8 // CLIENT CACHING: 1 yes, -1 no, for the next command (or EXEC)
	inExec  bool // EXEC is running its queue: replies are inside its array
	held    bool // hold was called and ReleasePushes is due
	monitor bool // said MONITOR

	execReads [][]byte // in a cluster, the keys EXEC's queue reads, which another node may answer
}

// BeforeRun is the hook before a command runs. A tracking client's cacheable
// read is remembered before it reads, so that a change landing between the
// read and the remembering cannot go unannounced; and the pushes that change
// causes wait until the reply is out.
func (o *Observers) BeforeRun(c *Client, cm *core.Command, args [][]byte) {
	conf := c.trackConf.Load()
	if conf != nil && cm.Flags&core.FlagBarrier != 0 && o.d.Clustered() {
		c.track.execReads = queuedReads(c.x.Queue)
	}
	if conf == nil || cm.Flags&core.FlagCacheable == 0 {
		return
	}
	c.rc.HoldPushes()
	c.track.held = true
	if conf.bcast || (conf.optin && c.track.caching != 1) || (conf.optout && c.track.caching == -1) {
		return
	}
	now := o.d.UnixNano()
	for _, k := range args[1:] {
		exp, _ := o.d.Lookup(k, now)
		o.remember(c.id, k, exp)
	}
}

// AfterRun is the hook after a command ran: it announces the keys the
// command changed, feeds MONITOR, and lets waiting pushes out.
func (o *Observers) AfterRun(c *Client, cm *core.Command, args [][]byte) {
	if cm.Flags&(core.FlagWrite|core.FlagAnnounces) == core.FlagWrite {
		o.invalidateWritten(c, cm, args)
	}
	if cm.Flags&core.FlagAdmin == 0 { // as in Redis 7, administrative commands are not shown
		o.feedMonitors(c, cm, args)
	}
	if c.track.inExec {
		return // the caching flag lasts the whole EXEC, and pushes wait for its reply's end
	}
	if cm.Flags&core.FlagKeepsCaching == 0 {
		c.track.caching = 0
	}
	if c.track.execReads != nil {
		o.invalidateUnseen(c, c.track.execReads)
		c.track.execReads = nil
	}
	if c.track.held {
		c.track.held = false
		c.rc.ReleasePushes(c.x.Out)
	}
}

// invalidateWritten announces the keys a write command changed: every
// key for FLUSHALL and FLUSHDB, else the keys its entry says it may change
// (DEL's). Decisions announce theirs in the decision seam (decide), and
// only when they changed them.
func (o *Observers) invalidateWritten(c *Client, cm *core.Command, args [][]byte) {
	if cm.Flags&core.FlagAllKeys != 0 {
		o.invalidateAll()
		return
	}
	if cm.Changes == nil {
		return
	}
	keys, _ := cm.Changes(args)
	for _, k := range keys {
		o.Invalidate(c, k)
	}
}

// remember records that client id read key, which expires at exp (0: absent).
func (o *Observers) remember(id int64, key []byte, exp int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	tk := o.keys[string(key)]
	if tk == nil {
		if len(o.keys) >= maxTrackedKeys {
			o.evictOneLocked()
		}
		tk = &trackedKey{readers: map[int64]struct{}{}}
		o.keys[string(key)] = tk
	}
	tk.readers[id] = struct{}{}
	if exp > 0 && tk.expiry != exp {
		tk.expiry = exp
		heap.Push(&o.expiries, expiry{at: exp, key: string(key)})
		o.armLocked()
	}
}

// evictOneLocked drops a tracked key to make room, telling its readers.
func (o *Observers) evictOneLocked() {
	for k, tk := range o.keys {
		delete(o.keys, k)
		targets := o.readersLocked(tk, nil)
		go o.sendInvalidations(targets, []byte(k)) // o.mu is held: send from elsewhere
		return
	}
}

// Invalidate tells every client that read key, or broadcasts on a prefix of
// it, that it changed. writer is the client that changed it, for NOLOOP.
func (o *Observers) Invalidate(writer *Client, key []byte) {
	o.mu.Lock()
	var targets []*Client
	if tk := o.keys[string(key)]; tk != nil {
		delete(o.keys, string(key))
		targets = o.readersLocked(tk, targets)
	}
	n := len(targets)
	targets = o.bcastTargetsLocked(key, targets)
	if len(targets) > n {
		o.watchLocked(key)
	}
	o.mu.Unlock()
	if writer != nil {
		targets = dropNoLoop(targets, writer)
	}
	o.sendInvalidations(targets, key)
}

// readersLocked appends the clients still tracking that read tk.
func (o *Observers) readersLocked(tk *trackedKey, dst []*Client) []*Client {
	for id := range tk.readers {
		if t := o.trackers[id]; t != nil {
			dst = append(dst, t)
		}
	}
	return dst
}

// dropNoLoop removes the writer from targets if it asked not to hear of its own changes.
func dropNoLoop(targets []*Client, writer *Client) []*Client {
	if conf := writer.trackConf.Load(); conf == nil || !conf.noloop {
		return targets
	}
	out := targets[:0]
	for _, t := range targets {
		if t != writer {
			out = append(out, t)
		}
	}
	return out
}

func matchesPrefix(prefixes [][]byte, key []byte) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if bytes.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// invalidateAll is FLUSHALL's: every tracking client is told to drop its
// whole cache, with the null invalidation Redis sends.
func (o *Observers) invalidateAll() {
	o.mu.Lock()
	o.keys, o.watched = map[string]*trackedKey{}, map[string]struct{}{}
	o.expiries = nil
	targets := make([]*Client, 0, len(o.trackers))
	for _, t := range o.trackers {
		targets = append(targets, t)
	}
	o.mu.Unlock()
	o.sendInvalidations(targets, nil)
}

// sendInvalidations sends each target the invalidation of key (nil: every key).
func (o *Observers) sendInvalidations(targets []*Client, key []byte) {
	for _, t := range targets {
		o.sendInvalidation(t, key)
	}
}

// sendInvalidation sends one client's invalidation where it asked: to
// itself in RESP3, or to its redirect target, in RESP3 as a push or in RESP2
// as a message on __redis__:invalidate if the target subscribed to it.
func (o *Observers) sendInvalidation(t *Client, key []byte) {
	conf := t.trackConf.Load()
	if conf == nil {
		return
	}
	to := t
	if conf.redirect != 0 {
		if to = o.byID(conf.redirect); to == nil {
			brokenRedirect(t, conf.redirect)
			return
		}
	}
	switch {
	case to.proto.Load() == 3:
		to.rc.Push(invalidateFrame(key))
	case to.subscribedInvalidate.Load():
		to.rc.Push(invalidateMessage(key))
	}
}

// brokenRedirect marks t's redirect as gone and, in RESP3, tells t so.
func brokenRedirect(t *Client, id int64) {
	t.brokenRedir.Store(true)
	if t.proto.Load() == 3 {
		t.rc.Push([]byte(">2\r\n$21\r\ntracking-redir-broken\r\n:" + strconv.FormatInt(id, 10) + "\r\n"))
	}
}

// invalidateFrame is the RESP3 push >2 invalidate [key], or >2 invalidate _ for every key.
func invalidateFrame(key []byte) []byte {
	b := []byte(">2\r\n$10\r\ninvalidate\r\n")
	return appendKeys(b, key, "_\r\n")
}

// invalidateMessage is the RESP2 pub/sub message a redirect target subscribed to __redis__:invalidate gets.
func invalidateMessage(key []byte) []byte {
	b := []byte("*3\r\n$7\r\nmessage\r\n$20\r\n" + invalidateChannel + "\r\n")
	return appendKeys(b, key, "$-1\r\n")
}

func appendKeys(b, key []byte, null string) []byte {
	if key == nil {
		return append(b, null...)
	}
	b = append(b, "*1\r\n$"...)
	b = strconv.AppendInt(b, int64(len(key)), 10)
	b = append(append(append(b, "\r\n"...), key...), "\r\n"...)
	return b
}

// AfterForward is the hook after a command was forwarded to the key's owner
// in a cluster. The owner's changes to the key are never seen here, so a
// tracking client's cacheable read from elsewhere is invalidated at once,
// after its reply: its cache never keeps what this node cannot vouch for.
func (o *Observers) AfterForward(c *Client, cm *core.Command, args [][]byte) {
	if cm.Flags&core.FlagAdmin == 0 {
		o.feedMonitors(c, cm, args)
	}
	if c.trackConf.Load() != nil && cm.Flags&core.FlagCacheable != 0 {
		o.invalidateUnseen(c, args[1:])
	}
}

// queuedReads copies the keys of the cacheable reads in an EXEC's queue.
func queuedReads(q []core.Queued) [][]byte {
	var keys [][]byte
	for _, e := range q {
		if e.Cmd.Flags&core.FlagCacheable != 0 {
			for _, k := range e.Args[1:] {
				keys = append(keys, bytes.Clone(k))
			}
		}
	}
	return keys
}

// invalidateUnseen invalidates keys for c alone, after the reply in hand:
// into its own reply stream in RESP3, else to its redirect target.
func (o *Observers) invalidateUnseen(c *Client, keys [][]byte) {
	conf := c.trackConf.Load()
	if conf == nil {
		return
	}
	for _, k := range keys {
		if conf.redirect == 0 && c.x.Proto == 3 {
			c.x.Out.WriteRaw(invalidateFrame(k))
		} else {
			o.sendInvalidation(c, k)
		}
	}
}
