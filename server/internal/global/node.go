package global

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/server/internal/glob"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// Config is one region's side of the regions, as the server's
// RegionConfig gives it, with its defaults taken.
type Config struct {
	Name  string // this region's name (--region)
	Peers []Peer // every other region (--region-peers)
	// Sync is the time between exchanges; Timeout bounds one. Required.
	Sync, Timeout time.Duration
	// Model is the escrow model's configuration but for Self, Regions
	// and Epoch, which New sets from the names and the clock.
	Model region.Config
	// Local are glob patterns of keys decided per region (--region-local).
	Local []string
	// Keys are the peer keys a region's handshake may prove. Required.
	Keys [][]byte
	// Forwarder carries the batches. Required.
	Forwarder cluster.Forwarder
	// TLS: this region refuses batches that come over a plain connection.
	TLS bool
	// Store is the key store, which holds a copy of this region's units
	// of every global key. Required.
	Store *shard.Map
	Log   *slog.Logger // required
	// Cluster, for a region made of a cluster, is its membership: the
	// node's name is its member name, its region's gateway carries the
	// exchanges, and a batch that arrives is fanned out to the owners of
	// its keys' slots (cluster.go). nil: a region of one node.
	Cluster Cluster
}

// Peer is another region: its name and the RESP address of a node of it.
type Peer struct{ Name, Addr string }

// Delegate is what a Node asks of the node it runs in, set once at New.
type Delegate interface {
	// UnixNano is the server's clock, in unix nanoseconds.
	UnixNano() int64
	// Policy returns the policy called name, or nil.
	Policy(name []byte) *policy.Policy
}

// Node is the server's side of the regions: the model (region.Store)
// under one lock, the loop that syncs every interval, and a link per other
// region that carries its batches. Its methods are safe for concurrent use.
type Node struct {
	d     Delegate
	cfg   Config
	rc    region.Config
	store *shard.Map
	log   *slog.Logger
	index map[string]int // region name → the model's index
	names []string       // by index
	local [][]byte

	mu      sync.Mutex // guards st, own and charged
	st      *region.Store
	own     []region.Own // mirrorLocked's buffer
	charged int64        // the table's bytes counted in the store's memory (chargeLocked)

	synced       atomic.Int64 // syncs done
	mirrorFailed atomic.Int64 // own units the key store had no room to copy (keys.go)

	wake    chan struct{}
	syncMu  sync.Mutex      // one SyncOnce at a time
	ready   []bool          // syncOnce's scratch, by link index
	batches []*region.Batch // syncOnce's scratch: the batches of the last sync, handed to the links
	links   []*link         // by index; nil at Self

	received, receivedBytes, refused atomic.Int64
	lastRefusal                      atomic.Pointer[string]

	gate               gate         // the slots served, with a cluster (cluster.go); guarded by mu
	relayed, partFails atomic.Int64 // batches carried for this region's other nodes; parts an owner did not answer
	// pulls a node did not answer; pulls this node answered; buckets its
	// gains raised by what the others held (handoff.go)
	pullFails, handed, taken atomic.Int64
	importRefused            atomic.Int64 // entries refused for a slot this node is importing (handoff.go)
}

// link carries batches to one other region, one at a time.
type link struct {
	name, addr string
	out        chan *region.Batch
	sent       atomic.Int64 // batches acknowledged
	sentBytes  atomic.Int64
	fails      atomic.Int64
	dropped    atomic.Int64  // syncs that passed the link by: it was busy (its next batch carries what changed)
	wire       atomic.Uint32 // the wire version its region speaks, if older than ours (wire.go); 0: ours
	busy       atomic.Bool   // a batch is on its way or in an exchange: syncOnce makes none for it
	passed     atomic.Bool   // a sync passed the link by: carry asks for one as soon as it is free
	up         atomic.Bool
	lastErr    atomic.Pointer[string]
	skewed     bool // its measured clock skew is past --region-max-skew (carry's only)
	// bufBytes is the capacity of the buffer carry encodes batches in,
	// kept between exchanges: counted in --maxmemory (chargeLocked).
	bufBytes atomic.Int64
	relay    []byte // carry's buffer for a batch sent through the gateway (cluster.go)
	// At a clustered region's gateway: the other nodes' batches waiting for
	// the link's next exchange, the buffer that bundles them with the
	// gateway's own (bundle.go); messages sent to l's region, and the
	// batches they carried (own, relayed, bundled).
	relays            relays
	bundle            []byte
	messages, carried atomic.Int64
	// cur is the address l sends to now (nil: addr), and alts the
	// addresses its region's acknowledgements named (a clustered region's
	// nodes): when cur stops answering, l tries the next (target, rotate).
	cur, alts atomic.Pointer[[]string]
}

// New validates cfg and returns a Node that has not started syncing (see Start).
func New(cfg Config, d Delegate) (*Node, error) {
	if cfg.Name == "" || len(cfg.Peers) == 0 || len(cfg.Keys) == 0 || cfg.Forwarder == nil || cfg.Store == nil ||
		cfg.Log == nil || d == nil || cfg.Sync <= 0 || cfg.Timeout <= 0 {
		return nil, errors.New("server: a region needs a name, peers, a cluster secret and a forwarder")
	}
	names := []string{cfg.Name}
	for _, p := range cfg.Peers {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		return nil, fmt.Errorf("server: region names repeat: %s", strings.Join(names, ","))
	}
	rn := &Node{d: d, cfg: cfg, store: cfg.Store, log: cfg.Log, index: map[string]int{}, names: names, wake: make(chan struct{}, 1)}
	for i, n := range names {
		rn.index[n] = i
	}
	rc := cfg.Model
	rc.Self, rc.Regions = rn.index[cfg.Name], len(names)
	rc.Sync = cfg.Sync
	rc.Epoch = d.UnixNano() // a restart is a new epoch: the others send back what they counted of this region
	// A clustered region's gains name their slots (cluster.go): any
	// region maps its keys to slots to take them.
	rc.Slot = func(key string) int { return slotOf([]byte(key)) }
	if cfg.Cluster != nil {
		rc.Member = cfg.Cluster.Topology().Self
	}
	st, err := region.New(rc)
	if err != nil {
		return nil, err
	}
	rn.rc, rn.st = rc, st
	st.SetRoom(rn.roomLocked) // a key held for other regions takes --maxmemory's room too
	for _, p := range cfg.Local {
		rn.local = append(rn.local, []byte(p))
	}
	rn.links = make([]*link, len(names))
	for _, p := range cfg.Peers {
		rn.links[rn.index[p.Name]] = &link{name: p.Name, addr: p.Addr, out: make(chan *region.Batch, 1)}
	}
	return rn, nil
}

// Start takes back this region's units of the global keys the key store
// holds (see restore), then starts the sync loop and a carrier per link,
// until done is closed. It returns how many keys it took back.
func (rn *Node) Start(done <-chan struct{}) int {
	n := rn.restore()
	go rn.run(done)
	for _, l := range rn.links {
		if l != nil {
			go rn.carry(l, done)
		}
	}
	return n
}

// Global reports whether key is decided across regions: not matched by --region-local.
func (rn *Node) Global(key []byte) bool {
	for _, p := range rn.local {
		if glob.Match(p, key) {
			return false
		}
	}
	return true
}

// ErrNotGlobal is the reply to an algorithm whose state is not a sum of counts.
func ErrNotGlobal(kind window.Kind) error {
	return policy.Error("ERR algorithm " + strings.ToUpper(kind.String()) + " cannot be global; use SLIDE or FIXED, or mark the key LOCAL")
}

// Decide decides cost units of a global key under lim at now (SLIDE or
// FIXED; the caller refuses the others with ErrNotGlobal).
func (rn *Node) Decide(key []byte, lim region.Limit, now, cost int64, peek bool) (window.Decision, error) {
	var err error
	rn.mu.Lock()
	if rn.gatedLocked(key) { // cluster.go
		rn.mu.Unlock()
		return rn.recovering(lim.Limit), nil
	}
	d := rn.st.Decide(key, lim, now, cost, peek)
	if d.Made {
		err = rn.keepFreshLocked(key, lim, d.Allowed, now) // keys.go
	}
	rn.chargeLocked()
	urgent := rn.st.Urgent()
	rn.mu.Unlock()
	if err != nil {
		return window.Decision{}, err
	}
	if urgent {
		rn.nudge()
	}
	return d.Decision, nil
}

// run syncs every interval, and early (at most ten times an interval) when
// a key has used half its escrow, until done is closed.
func (rn *Node) run(done <-chan struct{}) {
	t := time.NewTicker(rn.cfg.Sync)
	defer t.Stop()
	last := time.Now() // a nudge at start waits a tenth of the interval too
	for {
		select {
		case <-done:
			return
		case <-t.C:
		case <-rn.wake:
			if wait := rn.cfg.Sync/10 - time.Since(last); wait > 0 {
				select {
				case <-done:
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		rn.SyncOnce()
	}
}

// SyncOnce makes this sync's batches and hands them to the links that are
// free. The sync loop calls it every interval; tests may call it too.
func (rn *Node) SyncOnce() {
	rn.syncMu.Lock() // its scratch (ready, batches) is the sync's own
	defer rn.syncMu.Unlock()
	now := rn.d.UnixNano()
	var t Topology
	due := rn.cfg.Cluster != nil && rn.gainDue()
	if due {
		t = rn.cfg.Cluster.Topology() // not under mu: the topology may run the table-change hooks (OnTable)
	}
	rn.ready = rn.ready[:0]
	for _, l := range rn.links {
		rn.ready = append(rn.ready, l != nil && !l.busy.Load())
	}
	rn.mu.Lock()
	if due { // else a slot first decided since gainDue waits for the next sync, which reads the view
		rn.startPullsLocked(t)     // handoff.go
		rn.gainLocked(now, t.View) // cluster.go
	}
	bs := rn.st.AppendSync(rn.batches, now, rn.ready)
	rn.batches = bs
	rn.st.Sweep(now, 4096)
	rn.mirrorLocked(now)
	rn.chargeLocked()
	rn.mu.Unlock()
	rn.synced.Add(1)
	for i, b := range bs {
		if l := rn.links[i]; b != nil && l != nil {
			l.busy.Store(true) // carry clears it once the exchange is over
			l.out <- b         // never blocks: the link was not busy
		} else if l != nil {
			l.dropped.Add(1)
			l.passed.Store(true)
		}
	}
	clear(bs) // the links own the batches now
}

// chargeLocked counts what the region table grew or shrank by since the
// last call in the key store's memory, which --maxmemory bounds and INFO
// memory's used_memory_dataset shows: keys then meet -OOM sooner, as they
// should; the bytes are just as real (with the entries the links keep until
// acknowledged, and their encoding buffers). A key held only for other regions is
// refused before it is made when it does not fit (region.Store.SetRoom);
// the rest grows with this region's own decisions, which the key store's
// copy of each new key already bounds.
func (rn *Node) chargeLocked() {
	if d := rn.st.Bytes() + rn.linkBytes() - rn.charged; d != 0 {
		rn.store.Hold(d)
		rn.charged += d
	}
}

// roomLocked reports whether a region table of n bytes fits in the key
// store's memory, with what the store counts of it already.
func (rn *Node) roomLocked(n int64) bool { return rn.store.Room(n + rn.linkBytes() - rn.charged) }

// linkBytes returns what the links' encoding buffers hold. The entries of
// the batches they carry are the region table's (region.Store.Bytes
// counts them until acknowledged).
func (rn *Node) linkBytes() int64 {
	var n int64
	for _, l := range rn.links {
		if l != nil {
			n += l.bufBytes.Load()
		}
	}
	return n
}

// nudge asks the sync loop for an early exchange.
func (rn *Node) nudge() {
	select {
	case rn.wake <- struct{}{}:
	default:
	}
}

// Keys are the peer keys a region's handshake may prove.
func (rn *Node) Keys() [][]byte { return rn.cfg.Keys }

// Model returns the escrow model's configuration, as New completed it.
func (rn *Node) Model() region.Config { return rn.rc }
