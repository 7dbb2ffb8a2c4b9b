package replica

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
)

// Config turns on replicas for a cluster node: every slot's owner
// ships its changed keys to the slot's runner-up (cluster.Table.RunnerUp),
// which keeps them as copies, not served, and promotes them into its store
// when it takes the slot over from an owner that died.
type Config struct {
	// Feed drains Store's changes; the append-only log, if any, reads the
	// same feed, so each change is drained once for both. Required.
	Feed *persistence.Feed
	// Copies holds the copies of other nodes' keys this node is the backup
	// of. It is never served: not by decisions, DBSIZE, SCAN or KEYS. Required.
	Copies *shard.Map
	// Ship carries shipments to the backups, on connections of its own so
	// shipping never queues behind forwarded client requests. Required.
	Ship cluster.Forwarder
	// Interval is how often changes are shipped. Default DefaultInterval.
	Interval time.Duration
	// MaxQueue bounds the bytes waiting for one backup; past it the queue is
	// dropped and the backup gets a full sync once it answers. Default 32 MiB.
	MaxQueue int
	// MaxLag bounds how far behind its owner a backup's copies may be while
	// the owner serves the slot: an owner whose backup has not acknowledged
	// its changes up to MaxLag ago stops serving the slots that backup
	// backs up (see Fresh). The server sets it to three lease terms. Zero:
	// no bound (the owner serves whatever its backup holds).
	MaxLag time.Duration
}

// DefaultInterval is --replica-interval's default: a crash loses at most
// this much of each key's decisions.
const DefaultInterval = 100 * time.Millisecond

func (rc *Config) withDefaults() error {
	if rc.Feed == nil || rc.Copies == nil || rc.Ship == nil {
		return errors.New("server: replicas need a feed, a copies map and a shipping transport")
	}
	if rc.Interval <= 0 {
		rc.Interval = DefaultInterval
	}
	if rc.MaxQueue <= 0 {
		rc.MaxQueue = 32 << 20
	}
	return nil
}

// Delegate is what the Replicator asks of the node it runs in, set once
// at New.
type Delegate interface {
	// View returns the view routing uses now; when the membership has a
	// newer one, the table-change hooks (OnTable among them) run first.
	View() *cluster.View
	// Importing reports whether this node is importing any slot: a full
	// sync waits for the imports (see shipOnce).
	Importing() bool
	// Serving reports whether this node holds its lease: a full sync
	// waits for it too (see shipOnce).
	Serving() bool
	// Lost reports whether this node has slot lost (server/internal/handoff,
	// lost.go), and the slot's holder by its record: its keys here are not
	// the slot's state, so a full sync ships none of them and names the
	// slot lost, with its holder (see LostAt).
	Lost(slot int) (holder string, lost bool)
	// Handing reports whether this node is handing slot over and has sent
	// no DONE for it (server/internal/handoff's copy phase): no other node
	// served the slot since, so its keys here are its state, and promote
	// leaves them.
	Handing(slot int) bool
	// UnixNano is the server's clock, in unix nanoseconds.
	UnixNano() int64
	// Mono is a monotonic clock, in nanoseconds: the one the server
	// compares Fresh's deadlines with (the lease's).
	Mono() int64
}

// Replicator ships this node's changes to its slots' backups and keeps
// the copies other nodes ship to it.
type Replicator struct {
	cfg      Config
	d        Delegate
	store    *shard.Map // the store this node serves: what it ships, and where copies are promoted
	log      *slog.Logger
	self     string
	syncs    syncs                // which owner's full sync brought each slot's copies (server/internal/handoff, lost.go)
	syncGens syncGens             // each primary's latest full sync here, by number (see shipment)
	seedMu   sync.Mutex           // a full sync's drop, and a seed's check and import, one at a time (see Seed)
	apply    sync.Mutex           // one table change at a time
	mu       sync.Mutex           // guards peers, table and scratch
	peers    map[string]*shipPeer // by node name: every node this node has been primary to
	table    *cluster.Table       // the table the backups were last worked out from
	// backupOf holds, for each slot this node owns in table, the index in
	// table.Nodes() of its backup; noBackup for the other slots.
	backupOf *[cluster.Slots]uint16
	byNode   [][]shard.Entry // Changes' scratch, per backup, by index in table.Nodes()
	// orphans are the slots whose copies each node must drop: it backed
	// them up for this node, which no longer owns them (see dropOrphansLocked).
	orphans map[string]*SlotBits

	decoders sync.Pool // *persistence.Decoder: shipments arrive on a connection per primary
	// cut is when the last drain this replicator made began (unix ns, the
	// server's clock), guarded by mu. A key drained after that drain
	// ended has no change to ship older than it, but for the lag between
	// a command reading the clock and changing the key: deltaMargin.
	cut int64
	// drained is when (Delegate.Mono) the last drain this replicator made
	// began, stored once its changes are queued: a shipment taken after
	// that carries every change made before it (see shipOnce).
	drained atomic.Int64
	fresh   atomic.Pointer[freshTable] // what Fresh reads; nil until the first table, or without MaxLag

	promoted atomic.Int64 // copies promoted into the store
	seeded   atomic.Int64 // slots whose copies an old owner's seed brought (see Seed)
	copyErrs atomic.Int64 // copies refused by the copies map (full)
	missed   atomic.Int64 // deltas received that no copy could complete
	received atomic.Int64 // bytes of shipments received
	stop     context.CancelFunc
	done     chan struct{}
}

// New returns the replicator of the node self, which serves store. It
// subscribes to cfg.Feed; Start starts shipping.
func New(cfg Config, self string, store *shard.Map, log *slog.Logger, d Delegate) (*Replicator, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	r := &Replicator{cfg: cfg, d: d, store: store, log: log, self: self, peers: map[string]*shipPeer{},
		orphans: map[string]*SlotBits{}}
	cfg.Feed.Subscribe(r)
	return r, nil
}

// Start runs the shipping loop until Close.
func (r *Replicator) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop, r.done = cancel, make(chan struct{})
	go r.loop(ctx)
}

// Close stops shipping after one last drain and shipment, best effort.
func (r *Replicator) Close() {
	if r.stop == nil {
		return
	}
	r.stop()
	<-r.done
	r.mu.Lock()
	peers := make([]*shipPeer, 0, len(r.peers))
	for _, p := range r.peers {
		peers = append(peers, p)
	}
	r.mu.Unlock()
	for _, p := range peers {
		p.close()
	}
}

func (r *Replicator) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.tick() // the last changes, for a leave
			return
		case <-t.C:
		}
		r.tick()
	}
}

// tick notices a new table, drains the changes and wakes every peer's shipper.
func (r *Replicator) tick() {
	r.checkTable()
	start, mono := r.d.UnixNano(), r.d.Mono()
	r.cfg.Feed.Drain()
	r.mu.Lock()
	r.cut = start // a drain from now on comes after this one: see Changes
	r.mu.Unlock()
	r.drained.Store(mono)
	r.cfg.Copies.Sweep(r.d.UnixNano(), copiesSweepBudget)
	r.mu.Lock()
	for _, p := range r.peers {
		p.wake()
	}
	r.mu.Unlock()
}

// copiesSweepBudget bounds the expired copies freed per interval.
const copiesSweepBudget = 1000

// deltaMargin is how long before the last drain began a change not yet
// shipped may be stamped (see Changes): a command decides at the time it
// read its request, which a busy node runs some time later.
const deltaMargin = time.Second

// Changes implements persistence.Subscriber: each changed key of a slot
// this node owns goes to the queue of the slot's backup, as a delta if it
// keeps counters that no change since the drain before this one touched.
//
// Why r.cut bounds those changes: drains never overlap, and this one began
// after the drain that set r.cut ended, so the drain before it (the log's
// or this replicator's) began at r.cut or later. A key drained now was
// last read by that drain or an earlier one, or by a full sync; had it
// changed before that drain began, that drain would have read it. So every
// change not yet shipped was made after r.cut, by a command that read the
// clock at most deltaMargin before. A key whose copy misses anyway (a
// command slower than that, a clock stepped back) fails the delta's digest
// on the backup, and is shipped whole.
func (r *Replicator) Changes(_ int, es []shard.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.table
	if t == nil {
		return
	}
	since := int64(0)
	if r.cut > 0 {
		since = r.cut - int64(deltaMargin)
	}
	for _, e := range es {
		b := r.backupOf[cluster.Slot(policy.Route(e.Key))]
		if b == noBackup {
			continue // not owned here (decided while its owner was unreachable, or a copy being promoted), or no backup
		}
		persistence.Cut(&e, since)
		r.byNode[b] = append(r.byNode[b], e)
	}
	now := r.d.UnixNano()
	for i, batch := range r.byNode {
		if len(batch) == 0 {
			continue
		}
		if p := r.peers[t.Nodes()[i].Name]; p != nil {
			p.enqueue(batch, now)
		}
		clear(batch)
		r.byNode[i] = batch[:0]
	}
}

// noBackup marks a slot in backupOf whose changes ship nowhere.
const noBackup = math.MaxUint16

// backupsOf returns backupOf for t: per slot self owns, the index in
// t.Nodes() of its backup. Changes looks every changed key's backup up
// there, rather than comparing names per key.
func backupsOf(t *cluster.Table, self string) *[cluster.Slots]uint16 {
	index := make(map[string]uint16, len(t.Nodes()))
	for i, n := range t.Nodes() {
		index[n.Name] = uint16(i)
	}
	var out [cluster.Slots]uint16
	for s := range out {
		out[s] = noBackup
		if t.Owner(s).Name != self {
			continue
		}
		if b, ok := t.RunnerUp(s); ok {
			out[s] = index[b.Name]
		}
	}
	return &out
}

// Flushed implements persistence.Subscriber: after FLUSHALL every backup
// gets a full sync, which drops its copies of this node's slots.
func (r *Replicator) Flushed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.peers {
		p.needFull("flushall")
	}
}

// checkTable works out the backups again when the table changed.
func (r *Replicator) checkTable() {
	r.OnTable(nil, r.d.View())
}

// OnTable applies v's table, unless it is the one applied last. It is the
// table-change hook: before this node serves the slots it takes over from
// a dead owner, it promotes their copies; it drops copies it no longer
// backs up; and every backup that gained slots gets a full sync before
// its queue counts. The old view is the replicator's own last one.
func (r *Replicator) OnTable(_, v *cluster.View) {
	r.apply.Lock()
	defer r.apply.Unlock()
	r.mu.Lock()
	old := r.table
	r.mu.Unlock()
	if old != nil && v.Table.Epoch() <= old.Epoch() {
		return
	}
	nt := v.Table
	if old != nil {
		r.promote(old, v)
		r.endStreams(old, v)
	}
	r.dropStale(nt)
	if old != nil {
		r.forgetMoved(old, nt)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteFormerLocked(old, nt)
	r.table = nt
	r.backupOf, r.byNode = backupsOf(nt, r.self), make([][]shard.Entry, len(nt.Nodes()))
	gained := backupsGaining(old, nt, r.self)
	lost := backupsLosing(old, nt, r.self)
	for _, n := range nt.Nodes() {
		if n.Name == r.self {
			continue
		}
		p := r.peers[n.Name]
		if p == nil {
			p = newShipPeer(r, n)
			r.peers[n.Name] = p
			go p.run()
		}
		p.setNode(n)
		switch {
		case gained[n.Name]:
			p.needFull("new backup")
		case lost[n.Name]:
			// Its copies of the slots it no longer backs up would stay
			// there for good: its own table may never change (the flap
			// was ours), so nothing on its side drops them. A full sync
			// drops its copies of every slot this node owns first.
			p.needFull("no longer backup")
		}
	}
	for name, p := range r.peers {
		if !nt.Has(name) {
			p.close()
			delete(r.peers, name)
		}
	}
	r.dropOrphansLocked(old, nt)
	r.storeFreshLocked()
}

// dropOrphansLocked makes the backup in old of the slots this node owned
// in old and not in nt drop its copies of them, if nt makes that node
// neither their owner nor their backup. Those copies would stay there for
// good when the backup's own table does not change: when this node took
// the slots over in a membership flap of its own and hands them back
// (TestFlapKeepsTheOwnersKeys). Tombstones of this node's keys there queue
// behind the changes shipped before, and no change of those slots is
// shipped after; should a full sync be due, which drops the queue, it
// drops the slots' copies too (see orphanedFor).
func (r *Replicator) dropOrphansLocked(old, nt *cluster.Table) {
	if old == nil {
		return
	}
	for s := range cluster.Slots {
		b, ok := old.RunnerUp(s)
		if !ok || old.Owner(s).Name != r.self || !orphanOf(nt, s, r.self, b.Name) {
			continue
		}
		if r.orphans[b.Name] == nil {
			r.orphans[b.Name] = &SlotBits{}
		}
		r.orphans[b.Name][s/64] |= 1 << (s % 64)
	}
	store, now := r.store, r.d.UnixNano()
	for name, slots := range r.orphans {
		p := r.peers[name]
		if p == nil {
			delete(r.orphans, name)
			continue
		}
		var es []shard.Entry
		for i := range store.Shards() {
			es = store.ExportShardFunc(i, slots.KeyIn, es)
		}
		for i := range es {
			es[i] = shard.Entry{Key: es[i].Key} // a tombstone
		}
		if len(es) > 0 {
			p.enqueue(es, now)
		}
	}
}

// orphanOf reports whether backup, which backed up slot for self, must
// hold no copy of it in t: t makes self not its owner, and backup neither
// its owner nor its backup.
func orphanOf(t *cluster.Table, slot int, self, backup string) bool {
	owner := t.Owner(slot).Name
	if owner == self || owner == backup {
		return false
	}
	b, ok := t.RunnerUp(slot)
	return !ok || b.Name != backup
}

// orphanedFor returns, and forgets, the slots whose copies node must drop
// (see dropOrphansLocked) that are orphans still in t, for a full sync.
func (r *Replicator) orphanedFor(node string, t *cluster.Table) *SlotBits {
	var out SlotBits
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.orphans[node]; b != nil {
		for s := range cluster.Slots {
			if b.Has(s) && orphanOf(t, s, r.self, node) {
				out[s/64] |= 1 << (s % 64)
			}
		}
		delete(r.orphans, node)
	}
	return &out
}

// backupsGaining returns the nodes that back up a slot of self's in nt
// that they did not back up in old.
func backupsGaining(old, nt *cluster.Table, self string) map[string]bool {
	out := map[string]bool{}
	for s := range cluster.Slots {
		if nt.Owner(s).Name != self {
			continue
		}
		b, ok := nt.RunnerUp(s)
		if !ok {
			continue
		}
		if old == nil || old.Owner(s).Name != self {
			out[b.Name] = true
			continue
		}
		if ob, ok := old.RunnerUp(s); !ok || ob.Name != b.Name {
			out[b.Name] = true
		}
	}
	return out
}

// backupsLosing returns the nodes that backed up a slot of self's in old
// and no longer back it up in nt, though self still owns it.
func backupsLosing(old, nt *cluster.Table, self string) map[string]bool {
	out := map[string]bool{}
	if old == nil {
		return out
	}
	for s := range cluster.Slots {
		if old.Owner(s).Name != self || nt.Owner(s).Name != self {
			continue
		}
		ob, ok := old.RunnerUp(s)
		if !ok {
			continue
		}
		if b, ok := nt.RunnerUp(s); !ok || b.Name != ob.Name {
			out[ob.Name] = true
		}
	}
	return out
}

// ResyncBackups gives the backups of served, slots a node hands back that
// this node never stopped serving, a full sync. That node took them over
// while it did not see this node, promoting its copies of them into its
// store, where the cut drops them: as their backup again it holds none,
// and only the keys that change from now on would be shipped to it.
func (r *Replicator) ResyncBackups(served []int) {
	if len(served) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.table == nil {
		return
	}
	backups := map[string]bool{}
	for _, slot := range served {
		if b, ok := r.table.RunnerUp(slot); ok && r.table.Owner(slot).Name == r.self {
			backups[b.Name] = true
		}
	}
	for name := range backups {
		if p := r.peers[name]; p != nil {
			p.needFull("a node handed back slots it took over in a membership flap")
		}
	}
}
