package replica

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
)

// shipPeer ships this node's changes to one backup, from a goroutine of
// its own: a backup that stops answering delays only its own shipments,
// never a decision or another backup's. Its queue is bounded: past
// MaxQueue, or after a failed shipment, the queue is dropped and the
// backup is due a full sync of its slots, tried with backoff.
type shipPeer struct {
	r     *Replicator
	wakeC chan struct{}
	quit  chan struct{}
	once  sync.Once
	done  chan struct{}

	free chan []byte // chunk buffers shipped and acknowledged, for reuse

	mu      sync.Mutex // guards the fields below
	node    cluster.Node
	queue   [][]byte  // chunks of encoded entries not yet shipped, each with copyHead room first
	queued  int       // bytes in queue
	since   time.Time // when the oldest queued change was queued; zero if none
	full    bool      // a full sync is due before the queue counts
	reason  string    // why the last full sync was due
	synced  bool      // a full sync has succeeded since the last one fell due
	retryAt time.Time // no shipment before this, after a failure
	backoff time.Duration
	// deltas says the backup takes RL.PEER DELTA; a node too old to
	// refuses it, and is tried again noDeltas after.
	deltas   bool
	noDeltas time.Time
	// whole are the keys to ship whole next, not as deltas: the backup
	// could not complete their last delta. Each was touched, so the next
	// drain hands them over.
	whole map[string]struct{}

	bytes    atomic.Int64 // bytes shipped and acknowledged
	batches  atomic.Int64 // shipments acknowledged
	fulls    atomic.Int64 // full syncs done
	failures atomic.Int64 // shipments and full syncs that failed
	dropped  atomic.Int64 // queues dropped for a full sync
	lastShip atomic.Int64 // unix ns of the last acknowledged shipment
	contact  atomic.Int64 // unix ns of the backup's last reply: a shipment's or a heartbeat's
	lagNs    atomic.Int64 // age of the oldest change in the last shipment, when it was acknowledged
	inFlight atomic.Int64 // unix ns the oldest change not yet acknowledged was queued; 0 if none
	misses   atomic.Int64 // keys whose delta the backup could not complete
	// freshUntil is when (Delegate.Mono) this node stops serving the slots
	// this backup backs up, unless it acknowledges more (see Fresh).
	freshUntil atomic.Int64
	// former are slots of this node's that this backup backed up in an
	// earlier table and may still hold copies of (guarded by r.mu): until
	// a full sync's drop reaches it, they count toward Fresh with the
	// deadline they had when the table moved them, formerUntil (see
	// noteFormerLocked).
	former      SlotBits
	formerUntil int64 // guarded by r.mu
}

// newShipPeer starts a backup's shipper with MaxLag to reach it: a node
// that never shipped to it may lose that much (a new process's first
// decisions), and one new to its slots holds none of their copies, so a
// death of this node leaves them lost there rather than served stale.
func newShipPeer(r *Replicator, n cluster.Node) *shipPeer {
	p := &shipPeer{r: r, node: n, wakeC: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		free: make(chan []byte, shipWindow), full: true, reason: "first contact", deltas: true}
	p.extendFresh(r.d.Mono())
	return p
}

func (p *shipPeer) setNode(n cluster.Node) {
	p.mu.Lock()
	p.node = n
	p.mu.Unlock()
}

func (p *shipPeer) wake() {
	select {
	case p.wakeC <- struct{}{}:
	default:
	}
}

func (p *shipPeer) close() {
	p.once.Do(func() { close(p.quit) })
}

// enqueue encodes es for the backup, unless a full sync is due anyway.
func (p *shipPeer) enqueue(es []shard.Entry, now int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full {
		return // the full sync will carry their state
	}
	if p.queued == 0 {
		p.since = time.Unix(0, now)
	}
	p.queued -= chunksBytes(p.queue)
	if p.deltas {
		p.wholeLocked(es)
		p.queue = persistence.AppendDeltaChunks(p.queue, es, now, shipChunk, p.fresh)
	} else {
		p.queue = persistence.AppendEntriesChunks(p.queue, es, now, shipChunk, p.fresh)
	}
	p.queued += chunksBytes(p.queue)
	if p.queued > p.r.cfg.MaxQueue {
		p.needFullLocked("queue full")
	}
}

// wholeLocked makes whole the deltas among es of keys in p.whole.
func (p *shipPeer) wholeLocked(es []shard.Entry) {
	if len(p.whole) == 0 {
		return
	}
	for i := range es {
		if _, ok := p.whole[string(es[i].Key)]; ok {
			delete(p.whole, string(es[i].Key))
			es[i].Kept = 0
		}
	}
}

// missedDeltas ships keys whole from the next drain on: the backup could
// not complete their deltas. Past maxWhole of them a full sync is cheaper.
func (p *shipPeer) missedDeltas(keys [][]byte) {
	p.misses.Add(int64(len(keys)))
	p.mu.Lock()
	if p.full || len(p.whole)+len(keys) > maxWhole {
		p.needFullLocked("deltas missed")
		p.mu.Unlock()
		return
	}
	if p.whole == nil {
		p.whole = map[string]struct{}{}
	}
	for _, k := range keys {
		p.whole[string(k)] = struct{}{}
	}
	p.mu.Unlock()
	for _, k := range keys {
		p.r.store.Touch(k, policy.Route(k))
	}
}

// maxWhole bounds the keys waiting to be shipped whole to one backup.
const maxWhole = 4096

func chunksBytes(chunks [][]byte) int {
	n := 0
	for _, c := range chunks {
		n += len(c) - copyHead
	}
	return n
}

// needFull drops the queue: a full sync of the backup's slots is due.
func (p *shipPeer) needFull(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.needFullLocked(reason)
}

func (p *shipPeer) needFullLocked(reason string) {
	if !p.full && p.queued > 0 {
		p.dropped.Add(1)
	}
	p.full, p.reason, p.synced = true, reason, false
	p.queue, p.queued, p.since = nil, 0, time.Time{}
	clear(p.whole) // the full sync ships every key whole
}

func (p *shipPeer) run() {
	defer close(p.done)
	for {
		select {
		case <-p.quit:
			return
		case <-p.wakeC:
		}
		p.shipOnce()
	}
}

// shipOnce does what is due: a full sync, or the queue's shipment.
//
// Each acknowledgement lets this node serve the backup's slots until
// MaxLag after asOf: a full sync carries every change made before it
// began, a shipment or a heartbeat every change made before the drain
// that came last before it took the queue (drains queue their changes
// before r.drained moves; a failed shipment makes a full sync due). A
// shipment some of whose deltas the backup could not complete moves
// nothing: those keys ship whole with the next one.
func (p *shipPeer) shipOnce() {
	asOf := p.r.drained.Load()
	p.mu.Lock()
	if time.Now().Before(p.retryAt) {
		p.mu.Unlock()
		return
	}
	full, node := p.full, p.node
	if full && (p.r.d.Importing() || !p.r.d.Serving()) {
		// A full sync drops the backup's copies of every slot this node
		// owns; one this node still imports may come from those very
		// copies (server/internal/handoff, restore.go). It waits for the
		// imports. It waits for the lease too: its slots' copies count as
		// held once it ends (HeldBy), and a node without its lease knows
		// nothing newer than its table; a third node may have served its
		// slots meanwhile. The simulation's seed 195: a node cut off alone,
		// whose death the majority confirmed, saw its backup again at the
		// heal and, before it learned of its death, synced its keys from
		// before the cut there; the backup, which had served the slots
		// meanwhile and kept their newer keys, took them as held copies
		// and promoted them over its own keys at the node's next death. A first
		// one (a joiner's, a restarted node's) keeps the slots already
		// taken served meanwhile: the backup holds none of this process's
		// slots yet, or the very copies they were pulled from.
		if p.fulls.Load() == 0 {
			p.extendFresh(p.r.d.Mono())
		}
		p.mu.Unlock()
		return
	}
	var batch [][]byte
	var since time.Time
	if full {
		p.full = false // changes from now on queue behind the sync
		p.deltas = p.deltas || time.Now().After(p.noDeltas)
		asOf = p.r.d.Mono() // the export reads the store after this
	} else {
		batch, since = p.queue, p.since
		p.queue, p.queued, p.since = nil, 0, time.Time{}
	}
	deltas := p.deltas // the queue's chunks were all encoded so: needFull drops them when it changes
	p.mu.Unlock()
	var err error
	switch {
	case full:
		err = p.fullSync(node)
	case len(batch) == 0 && !p.heartbeatDue():
		return
	case len(batch) == 0:
		err = p.heartbeat(node)
	default:
		p.inFlight.CompareAndSwap(0, since.UnixNano())
		misses := p.misses.Load()
		var n int64
		if n, err = p.sendChunks(node, batch, deltas); err == nil {
			p.acked(n, since)
		}
		if p.misses.Load() != misses {
			asOf = 0
		}
	}
	if err == nil && asOf > 0 {
		p.extendFresh(asOf)
	}
	p.settle(err, full, deltas)
}

// acked records a shipment the backup took.
func (p *shipPeer) acked(n int64, since time.Time) {
	now := time.Now()
	p.bytes.Add(n)
	p.batches.Add(1)
	p.lastShip.Store(now.UnixNano())
	p.contact.Store(now.UnixNano())
	if !since.IsZero() {
		p.lagNs.Store(int64(now.Sub(since)))
	}
	p.inFlight.Store(0)
}

// settle backs off after a failure, with a full sync due, or resets the backoff.
func (p *shipPeer) settle(err error, full, deltas bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pe := (*peerError)(nil); deltas && !full && errors.As(err, &pe) && pe.msg == errPeerAuth {
		// What a node from before deltas answers RL.PEER DELTA with.
		p.deltas, p.noDeltas = false, time.Now().Add(deltaRetry)
	}
	if err == nil {
		p.backoff, p.retryAt = 0, time.Time{}
		if full {
			p.synced = true
			p.fulls.Add(1)
		}
		return
	}
	if pe := (*peerError)(nil); errors.As(err, &pe) && pe.msg == ErrResync {
		// A new connection: the backup may be a new process, with no copies.
		p.needFullLocked("new connection")
		p.r.log.Info("replicas: the backup asked for a full sync on a new connection", "peer", p.node.Name)
		return
	}
	p.failures.Add(1)
	p.needFullLocked("shipment failed")
	p.backoff = min(max(2*p.backoff, p.r.cfg.Interval), p.backoffCap())
	p.retryAt = time.Now().Add(p.backoff)
	p.r.log.Debug("replicas: shipment failed; a full sync follows", "peer", p.node.Name, "err", err, "retry_in", p.backoff)
}

// maxShipBackoff caps the wait between tries to a backup that does not
// answer; with MaxLag, a quarter of it (see backoffCap).
const maxShipBackoff = 5 * time.Second

// backoffCap is the longest wait between tries: a backup that answers
// again is caught up soon enough that its primary, which stops serving
// its slots MaxLag after the last acknowledgement, serves them again.
func (p *shipPeer) backoffCap() time.Duration {
	if lag := p.r.cfg.MaxLag / 4; lag > 0 {
		return min(maxShipBackoff, max(lag, p.r.cfg.Interval))
	}
	return maxShipBackoff
}

// deltaRetry is how long a backup that refused a delta gets whole entries
// only: it may be upgraded meanwhile.
const deltaRetry = time.Minute

func (p *shipPeer) send(node cluster.Node, cmds [][][]byte) error {
	reps, err := p.r.cfg.Ship.Forward(context.Background(), node.Addr, cmds)
	if err != nil {
		return err
	}
	return refusal(reps)
}

// refusal returns the first error reply of reps as an error, or nil.
func refusal(reps [][]byte) error {
	for _, rep := range reps {
		if len(rep) > 0 && rep[0] == '-' {
			return &peerError{string(rep[1 : len(rep)-2])}
		}
	}
	return nil
}

type peerError struct{ msg string }

func (e *peerError) Error() string { return "backup refused: " + e.msg }

// fullSync replaces the backup's copies of its slots of this node's with
// their current state: first RL.PEER SYNC, which drops them, then the
// keys in chunks. Changes queued meanwhile follow it, and any key changed
// during the export was marked again, so its newer state follows too.
func (p *shipPeer) fullSync(node cluster.Node) error {
	r := p.r
	r.mu.Lock()
	t := r.table
	r.mu.Unlock()
	slots := make([]byte, cluster.Slots/8)
	lostBy := map[string][]byte{}
	var mine [cluster.Slots]bool
	for s := range cluster.Slots {
		if t.Owner(s).Name != r.self {
			continue
		}
		mine[s] = true
		b, ok := t.RunnerUp(s)
		if !ok || b.Name != node.Name {
			continue
		}
		if holder, lost := r.d.Lost(s); lost {
			bm := lostBy[holder]
			if bm == nil {
				bm = make([]byte, cluster.Slots/8)
				lostBy[holder] = bm
			}
			bm[s/8] |= 1 << (s % 8)
			continue
		}
		slots[s/8] |= 1 << (s % 8)
	}
	var lost [][]byte // SYNC's LOST pairs (see LostAt)
	for _, holder := range slices.Sorted(maps.Keys(lostBy)) {
		lost = append(lost, []byte(holder), lostBy[holder])
	}
	// The backup drops its copies of every slot this node owns (its own
	// backups included, should the table have moved), and of those it
	// should no longer hold for this node, then takes these: not those of
	// a slot lost here, whose keys are older than its state, held by the
	// node it was lost from; SYNC names them lost (see LostAt).
	orphans := r.orphanedFor(node.Name, t)
	drop := make([]byte, cluster.Slots/8)
	for s, m := range mine {
		if m || orphans.Has(s) {
			drop[s/8] |= 1 << (s % 8)
		}
	}
	r.mu.Lock()
	former := p.former // the drop below reaches these
	r.mu.Unlock()
	ends, err := p.sendSync(node, drop, slots, lost)
	if err != nil {
		return err
	}
	r.droppedFormer(p, &former, drop)
	if p.fulls.Load() == 0 {
		p.extendFresh(r.d.Mono())
	}
	keep := func(key []byte) bool {
		s := cluster.Slot(policy.Route(key))
		return slots[s/8]&(1<<(s%8)) != 0
	}
	var es []shard.Entry
	var chunks [][]byte
	var sent int64
	store := r.store
	for i := range store.Shards() {
		es = store.ExportShardFunc(i, keep, es[:0])
		chunks = persistence.AppendEntriesChunks(chunks, es, r.d.UnixNano(), shipChunk, p.fresh)
		if len(chunks) <= shipWindow && i < store.Shards()-1 {
			continue
		}
		ready := chunks // every chunk but the last is full; at the end, the last too
		if i < store.Shards()-1 {
			ready, chunks = chunks[:len(chunks)-1], chunks[len(chunks)-1:]
		} else {
			chunks = nil
		}
		n, err := p.sendChunks(node, ready, false)
		if err != nil {
			return err
		}
		sent += n
		if p.fulls.Load() == 0 {
			// A first full sync (see shipOnce) keeps the slots served while
			// the backup takes it: a loaded host's can outlast MaxLag.
			p.extendFresh(r.d.Mono())
		}
	}
	if ends {
		if err := p.endSync(node, sent); err != nil {
			return err
		}
	}
	p.acked(sent, time.Time{})
	return nil
}

// A primary with nothing to ship still hears from each backup every
// heartbeatIntervals intervals, or a quarter of MaxLag if that is sooner,
// with an empty RL.PEER COPY. A backup that restarted sooner than failure
// detection noticed is empty, and without changes to ship its primary
// would not find out: the heartbeat fails on the old connection, or gets
// -RESYNC on a new one, and a full sync follows either way. And its
// acknowledgement keeps the backup's slots served (see Fresh). Nodes from
// before heartbeats take an empty COPY too.
const heartbeatIntervals = 10

// heartbeatDue reports whether the backup has not been heard from for
// heartbeatIntervals intervals, or a quarter of MaxLag.
func (p *shipPeer) heartbeatDue() bool {
	last := p.contact.Load()
	every := heartbeatIntervals * p.r.cfg.Interval
	if lag := p.r.cfg.MaxLag / 4; lag > 0 {
		every = min(every, lag)
	}
	return last != 0 && time.Since(time.Unix(0, last)) >= every
}

// heartbeat sends the backup an empty shipment.
func (p *shipPeer) heartbeat(node cluster.Node) error {
	err := p.send(node, [][][]byte{{[]byte(cluster.PeerCommand), []byte(cluster.PeerCopy), nil}})
	if err == nil {
		p.contact.Store(time.Now().UnixNano())
	}
	return err
}
