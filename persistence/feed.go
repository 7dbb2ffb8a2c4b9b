package persistence

import (
	"sync"

	"github.com/rlstore/rlstore/shard"
)

// Subscriber receives what a Feed drains from a Map.
type Subscriber interface {
	// Changes receives shard i's changes since the last drain, as
	// Map.DrainDirtyUpTo returns them: tombstones first, then current
	// states, a bounded piece at a time (so a shard may come in several
	// calls).
	// es, and the keys and counters its entries point to, are reused once
	// Changes returns: a subscriber copies or encodes what it keeps.
	Changes(i int, es []shard.Entry)
	// Flushed says every key was deleted (FLUSHALL), after every change
	// drained before it and before any drained after it.
	Flushed()
}

// Feed is the one drainer of a Map's changes (shard.Map.DrainDirty): the
// append-only log and the replica shipper both subscribe to it, so neither
// steals the other's changes. Each drain delivers every shard's changes to
// every subscriber, in order; drains never overlap, so a subscriber sees a
// key's states in the order they were made. It is safe for concurrent use.
type Feed struct {
	m    *shard.Map
	mu   sync.Mutex // one drain or flush at a time; guards the fields below
	subs []Subscriber
	ents []shard.Entry
	buf  shard.ExportBuffer // the drained entries' keys and counters
}

// NewFeed makes m track its changes (Map.TrackChanges) and returns their feed.
func NewFeed(m *shard.Map) *Feed {
	m.TrackChanges()
	return &Feed{m: m}
}

// Subscribe adds s: it receives every drain from now on.
func (f *Feed) Subscribe(s Subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, s)
}

// Drain drains every shard's changes and hands them to each subscriber. It
// returns the number of entries drained.
func (f *Feed) Drain() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := range f.m.Shards() {
		for more := true; more; {
			f.ents, more = f.m.DrainDirtyUpTo(i, f.ents[:0], &f.buf, drainPiece)
			if len(f.ents) == 0 {
				continue
			}
			n += len(f.ents)
			for _, s := range f.subs {
				s.Changes(i, f.ents)
			}
		}
	}
	clear(f.ents) // let the drained keys go
	if cap(f.ents) > maxKeptEntries {
		f.ents = nil // a burst's (a rebuilt shard's every key): 120 B an entry
	}
	return n
}

// A drain hands a shard's changes over drainPiece at a time, so that the
// entries a Feed keeps are enough for every drain but a burst's (tombstones,
// a rebuilt shard), and a busy drain allocates nothing. maxKeptEntries
// bounds the entries kept for the next drain: a shard with 4k keys all
// changed since the last drain would keep 480 KB.
const (
	drainPiece     = 256
	maxKeptEntries = 1024
)

// Flush runs flush, which deletes every key, with no drain running, then
// tells each subscriber: no change from before it is delivered after it.
func (f *Feed) Flush(flush func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	flush()
	for _, s := range f.subs {
		s.Flushed()
	}
}
