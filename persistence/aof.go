package persistence

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
)

// The append-only log is a sequence of segment files, each a header block then
// entries blocks (key states and tombstones, as Map.DrainDirty returns them) and flush
// blocks (FLUSHALL). Replay applies them in order, so the last state written
// for a key wins. A snapshot starts a new segment and, once it is durable,
// deletes the older ones, which keeps the log's size bounded.
//
// Its parts: the appendfsync modes (fsyncmode.go), replay (replay.go), one
// segment file's I/O (segment.go), the writer (aof, here), the rotation a
// snapshot makes (rotate.go), and the group commit of appendfsync always
// (groupcommit.go).

// aof writes the changes a Map records to log segments.
//
// While a snapshot is being written, some shards have been exported to it and
// others not yet. A shard's changes go to the new segment from the moment it
// is exported, under mu, so the new segment holds only changes newer than the
// snapshot and the old one everything before: replay is right whether the
// crash comes before or after the snapshot is renamed into place.
type aof struct {
	fs    vfs.FS
	dir   string
	feed  *Feed // drains the Map's changes into Changes, for the replica shipper too
	clock func() int64

	mu    sync.Mutex // guards segs and route
	segs  []*segment // live segments, oldest first
	route []*segment // per shard: the segment its changes go to

	flushMu sync.Mutex // held by one flush at a time; guards the segments' buffers and files, and closed
	closed  bool       // close has run: drains are no longer logged

	group groupCommit

	bytes    atomic.Int64 // bytes in live segments
	logged   atomic.Int64 // entries written since the last snapshot
	unsynced atomic.Int64 // unix ns of the oldest write not yet fsynced; 0 if none
	fsynced  atomic.Int64 // unix ns of the last fsync
	failed   atomic.Pointer[error]
	errors   atomic.Int64    // flushes and commits that failed
	fsyncs   fsyncTimer      // the segments' fsyncs
	onChange func(err error) // told each change of failure state: the first failure, and the recovery (nil)
}

// newAOF logs what feed drains from m to segs, the newest last.
func newAOF(fsys vfs.FS, dir string, m *shard.Map, feed *Feed, clock func() int64, segs []*segment) *aof {
	l := &aof{fs: fsys, dir: dir, feed: feed, clock: clock, segs: segs, route: make([]*segment, m.Shards())}
	for i := range l.route {
		l.route[i] = segs[len(segs)-1]
	}
	for _, seg := range segs {
		l.bytes.Add(seg.size)
	}
	l.group.flush = l.flush
	feed.Subscribe(l)
	return l
}

// flush drains every shard's changes into the log (through the feed, which
// also hands them to the replica shipper), writes them and, if sync is set,
// fsyncs them.
func (l *aof) flush(sync bool) error {
	l.feed.Drain()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	err := l.writeLocked(sync, l.clock())
	if err != nil {
		l.errors.Add(1)
	}
	return err
}

// Changes implements Subscriber: it buffers shard i's drained changes for
// the segment the shard logs to, writing a full buffer at once.
//
// A drain made before a snapshot exported shard i may arrive here after,
// and go to the snapshot's new segment: replay then applies a state no
// newer than the snapshot's, but any change made in between was marked
// again and follows it, so the last state written still wins.
func (l *aof) Changes(i int, es []shard.Entry) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.closed {
		return
	}
	now := l.clock()
	l.mu.Lock()
	seg := l.route[i]
	l.mu.Unlock()
	if seg.buf == nil {
		seg.buf = make([]byte, 0, segmentBuffer)
	}
	seg.buf = appendEntries(seg.buf, es, now)
	l.logged.Add(int64(len(es)))
	if len(seg.buf) >= writeChunk {
		l.writeSegLocked(seg, now) // an error stays in seg.err for writeLocked
	}
}

// Flushed implements Subscriber: it buffers a flush block in the newest segment.
func (l *aof) Flushed() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.closed {
		return
	}
	l.mu.Lock()
	seg := l.segs[len(l.segs)-1]
	l.mu.Unlock()
	buf, start := beginBlock(seg.buf, kindFlush)
	seg.buf = endBlock(buf, start)
}

// writeSegLocked writes seg's buffer and counts what it wrote.
func (l *aof) writeSegLocked(seg *segment, now int64) error {
	before := seg.size
	err := seg.write()
	if seg.size > before {
		l.bytes.Add(seg.size - before)
		l.unsynced.CompareAndSwap(0, now)
	}
	return err
}

// writeLocked writes every segment's buffer and, if sync is set, fsyncs it.
func (l *aof) writeLocked(sync bool, now int64) error {
	l.mu.Lock()
	segs := append([]*segment(nil), l.segs...)
	l.mu.Unlock()
	defer l.checkLocked()
	var errs []error
	for _, seg := range segs {
		errs = append(errs, l.writeSegLocked(seg, now))
	}
	if sync {
		for _, seg := range segs {
			errs = append(errs, seg.sync(&l.fsyncs))
		}
		if err := errors.Join(errs...); err == nil {
			l.unsynced.Store(0)
			l.fsynced.Store(l.clock())
		}
	}
	return errors.Join(errs...)
}

// appendFlush logs that every key was deleted, calling flush, which deletes
// them, with no drain running (see Feed.Flush), so no change from before it
// is written after it.
func (l *aof) appendFlush(flush func(), sync bool) error {
	l.feed.Flush(flush) // Flushed buffers the flush block
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.writeLocked(sync, l.clock())
}

// lastGen returns the newest segment's generation.
func (l *aof) lastGen() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.segs[len(l.segs)-1].gen
}

// broken returns a live segment's write or fsync failure, without waiting for a flush.
func (l *aof) broken() error {
	if err := l.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// checkLocked records the first failure among the live segments, for
// broken, and reports a change of failure state to onChange.
func (l *aof) checkLocked() {
	l.mu.Lock()
	var err error
	for _, seg := range l.segs {
		if seg.err != nil {
			err = seg.err
			break
		}
	}
	l.mu.Unlock()
	var was *error
	if err != nil {
		was = l.failed.Swap(&err)
	} else {
		was = l.failed.Swap(nil)
	}
	if (was == nil) != (err == nil) && l.onChange != nil {
		l.onChange(err)
	}
}

// close writes and fsyncs what is left and closes the segments.
func (l *aof) close() error {
	err := l.flush(true)
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.closed = true
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, seg := range l.segs {
		if seg.f != nil {
			err = errors.Join(err, seg.f.Close())
			seg.f = nil
		}
	}
	return err
}
