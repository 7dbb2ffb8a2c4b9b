package server

import (
	"context"
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
	r     *replicator
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

	bytes    atomic.Int64 // bytes shipped and acknowledged
	batches  atomic.Int64 // shipments acknowledged
	fulls    atomic.Int64 // full syncs done
	failures atomic.Int64 // shipments and full syncs that failed
	dropped  atomic.Int64 // queues dropped for a full sync
	lastShip atomic.Int64 // unix ns of the last acknowledged shipment
	lagNs    atomic.Int64 // age of the oldest change in the last shipment, when it was acknowledged
	inFlight atomic.Int64 // unix ns the oldest change not yet acknowledged was queued; 0 if none
}

func newShipPeer(r *replicator, n cluster.Node) *shipPeer {
	return &shipPeer{r: r, node: n, wakeC: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		free: make(chan []byte, shipWindow), full: true, reason: "first contact"}
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
	p.queue = persistence.AppendEntriesChunks(p.queue, es, now, shipChunk, p.fresh)
	p.queued += chunksBytes(p.queue)
	if p.queued > p.r.cfg.MaxQueue {
		p.needFullLocked("queue full")
	}
}

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
func (p *shipPeer) shipOnce() {
	p.mu.Lock()
	if time.Now().Before(p.retryAt) {
		p.mu.Unlock()
		return
	}
	full, node := p.full, p.node
	var batch [][]byte
	var since time.Time
	if full {
		p.full = false // changes from now on queue behind the sync
	} else {
		batch, since = p.queue, p.since
		p.queue, p.queued, p.since = nil, 0, time.Time{}
	}
	p.mu.Unlock()
	var err error
	switch {
	case full:
		err = p.fullSync(node)
	case len(batch) == 0:
		return
	default:
		p.inFlight.CompareAndSwap(0, since.UnixNano())
		var n int64
		if n, err = p.sendChunks(node, batch); err == nil {
			p.acked(n, since)
		}
	}
	p.settle(err, full)
}

// acked records a shipment the backup took.
func (p *shipPeer) acked(n int64, since time.Time) {
	now := time.Now()
	p.bytes.Add(n)
	p.batches.Add(1)
	p.lastShip.Store(now.UnixNano())
	if !since.IsZero() {
		p.lagNs.Store(int64(now.Sub(since)))
	}
	p.inFlight.Store(0)
}

// settle backs off after a failure, with a full sync due, or resets the backoff.
func (p *shipPeer) settle(err error, full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.backoff, p.retryAt = 0, time.Time{}
		if full {
			p.synced = true
			p.fulls.Add(1)
		}
		return
	}
	p.failures.Add(1)
	p.needFullLocked("shipment failed")
	p.backoff = min(max(2*p.backoff, p.r.cfg.Interval), maxShipBackoff)
	p.retryAt = time.Now().Add(p.backoff)
	p.r.s.log.Debug("replicas: shipment failed; a full sync follows", "peer", p.node.Name, "err", err, "retry_in", p.backoff)
}

// maxShipBackoff caps the wait between tries to a backup that does not answer.
const maxShipBackoff = 5 * time.Second

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
	var mine [cluster.Slots]bool
	for s := range cluster.Slots {
		if t.Owner(s).Name != r.self {
			continue
		}
		mine[s] = true
		if b, ok := t.RunnerUp(s); ok && b.Name == node.Name {
			slots[s/8] |= 1 << (s % 8)
		}
	}
	// The backup drops its copies of every slot this node owns (its own
	// backups included, should the table have moved), and of those it
	// should no longer hold for this node, then takes these.
	orphans := r.orphanedFor(node.Name, t)
	drop := make([]byte, cluster.Slots/8)
	for s, m := range mine {
		if m || orphans.has(s) {
			drop[s/8] |= 1 << (s % 8)
		}
	}
	if err := p.send(node, [][][]byte{{[]byte("RL.PEER"), []byte("SYNC"), drop}}); err != nil {
		return err
	}
	keep := func(key []byte) bool {
		s := cluster.Slot(policy.Route(key))
		return slots[s/8]&(1<<(s%8)) != 0
	}
	var es []shard.Entry
	var chunks [][]byte
	var sent int64
	store := r.s.cfg.Store
	for i := range store.Shards() {
		es = store.ExportShardFunc(i, keep, es[:0])
		chunks = persistence.AppendEntriesChunks(chunks, es, r.s.unixNano(), shipChunk, p.fresh)
		if len(chunks) <= shipWindow && i < store.Shards()-1 {
			continue
		}
		ready := chunks // every chunk but the last is full; at the end, the last too
		if i < store.Shards()-1 {
			ready, chunks = chunks[:len(chunks)-1], chunks[len(chunks)-1:]
		} else {
			chunks = nil
		}
		n, err := p.sendChunks(node, ready)
		if err != nil {
			return err
		}
		sent += n
	}
	p.acked(sent, time.Time{})
	return nil
}
