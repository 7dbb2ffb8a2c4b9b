package persistence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// FsyncMode says when the log is fsynced, as redis-server's appendfsync does.
type FsyncMode uint8

// Fsync modes. The zero value is the default, FsyncEverysec.
const (
	FsyncEverysec FsyncMode = iota // write and fsync once per flush interval: a crash loses about a second
	FsyncAlways                    // Commit writes and fsyncs before the server replies
	FsyncNo                        // write once per flush interval; the OS decides when it reaches the disk
)

func (f FsyncMode) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// ParseFsync parses an --appendfsync value.
func ParseFsync(s string) (FsyncMode, error) {
	for _, f := range []FsyncMode{FsyncEverysec, FsyncAlways, FsyncNo} {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("persistence: appendfsync must be always, everysec or no, got %q", s)
}

// replayLogFile replays the segment at path into m; see replayLog. A torn tail
// is truncated on disk.
func replayLogFile(fsys vfs.FS, path string, m *shard.Map, now int64) (size, records int64, warn *Warning, err error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("persistence: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		size, records, warn, err = replayLog(f, st.Size(), filepath.Base(path), m, now)
	}
	f.Close()
	if err == nil && warn != nil {
		err = truncateTorn(fsys, path, size)
	}
	return size, records, warn, err
}

// replayLog applies the log segment in r, of size bytes and called name in
// errors, to m, dropping states expired at now. It returns the size of the
// segment's valid part and the records applied. A torn last record is left out
// and reported in warn; damage anywhere else is a *CorruptError.
func replayLog(r io.Reader, size int64, name string, m *shard.Map, now int64) (valid, records int64, warn *Warning, err error) {
	br := newBlockReader(r, size, name)
	var eb entryBlock
	for first := true; ; first = false {
		payload, err := br.next()
		var torn *tornError
		switch {
		case errors.Is(err, io.EOF):
			return br.off, records, nil, nil
		case errors.As(err, &torn):
			return torn.off, records, &Warning{File: name, Offset: torn.off, Dropped: size - torn.off, Reason: torn.reason}, nil
		case err != nil:
			return br.last, records, nil, err
		}
		n, err := applyLogBlock(br, payload, first, m, now, &eb)
		records += n
		if err != nil {
			return br.last, records, nil, err
		}
	}
}

// applyLogBlock applies one block of a log segment.
func applyLogBlock(br *blockReader, payload []byte, first bool, m *shard.Map, now int64, eb *entryBlock) (int64, error) {
	switch {
	case first:
		if _, reason := parseHeader(payload, magicLog); reason != "" {
			return 0, br.corrupt(br.last, reason)
		}
		return 0, nil
	case payload[0] == kindEntries:
		n, err := importBlock(br, payload, m, now, true, eb)
		return int64(n), err
	case payload[0] == kindFlush && len(payload) == 1:
		m.Flush()
		return 1, nil
	}
	return 0, br.corrupt(br.last, fmt.Sprintf("unexpected block kind %d", payload[0]))
}

// segment is one log file being written.
type segment struct {
	gen    uint64
	path   string
	f      vfs.File // nil for a segment replayed at open, which is never written again
	buf    []byte   // blocks encoded but not yet written
	size   int64    // bytes in the file
	whole  int64    // bytes in the file up to the end of the last write that succeeded
	header int64    // bytes of its header; 0 for a replayed segment
	synced int64    // bytes known to be on disk
	err    error    // a failed write or fsync: the segment takes no more
}

// createSegment creates a log segment holding only its header, durably,
// timing the segment's fsync with t.
func createSegment(fsys vfs.FS, dir string, gen uint64, now int64, t *fsyncTimer) (*segment, error) {
	seg := &segment{gen: gen, path: filepath.Join(dir, logName(gen))}
	f, err := fsys.OpenFile(seg.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	hdr := appendHeader(nil, magicLog, now, gen)
	_, err = f.Write(hdr)
	if err == nil {
		err = t.sync(f)
	}
	if err == nil {
		err = syncDir(fsys, dir)
	}
	if err != nil {
		_ = f.Close()
		_ = fsys.Remove(seg.path) // best effort: an empty segment left behind is harmless
		return nil, fmt.Errorf("persistence: creating %s: %w", seg.path, err)
	}
	seg.f, seg.size, seg.synced, seg.whole = f, int64(len(hdr)), int64(len(hdr)), int64(len(hdr))
	seg.header = seg.size
	return seg, nil
}

// write writes out the segment's buffer.
func (seg *segment) write() error {
	if seg.err != nil {
		seg.buf = seg.buf[:0] // lost: the next snapshot holds these changes
		return seg.err
	}
	if len(seg.buf) == 0 {
		return nil
	}
	if seg.f == nil {
		return ErrClosed
	}
	n, err := seg.f.Write(seg.buf)
	seg.size += int64(n)
	if cap(seg.buf) > 4*writeChunk {
		seg.buf = nil // a burst's buffer (a FLUSHALL, a huge key) is not worth keeping
	}
	seg.buf = seg.buf[:0]
	if err != nil {
		seg.err = fmt.Errorf("persistence: writing %s: %w", seg.path, err)
	} else {
		seg.whole = seg.size
	}
	return seg.err
}

// sync fsyncs what was written. After a failed fsync nothing is known about
// what reached the disk, so the segment takes no more. t times the fsync.
func (seg *segment) sync(t *fsyncTimer) error {
	if seg.err != nil || seg.synced == seg.size {
		return seg.err
	}
	if seg.f == nil {
		return ErrClosed
	}
	if err := t.sync(seg.f); err != nil {
		seg.err = fmt.Errorf("persistence: fsync %s: %w", seg.path, err)
		return seg.err
	}
	seg.synced = seg.size
	return nil
}

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

// writeChunk bounds a segment's buffer during a flush. Buffering a whole
// interval's changes before writing them cost 8 bytes of RSS a key while 1M
// keys were filled at 170k a second: the buffer, and the copies append left
// behind as it doubled, stayed resident after the fill. With 256 KiB chunks
// each segment kept a 512 KiB buffer (0.5 B a key at 1M keys); 32 KiB chunks
// still write a busy fill's 4 MB a second in 130 writes. A segment's buffer
// is made once, with segmentBuffer bytes: the feed hands over a shard's
// changes a bounded piece at a time, so a chunk and one piece fit in it and
// appends never regrow it.
const (
	writeChunk    = 32 << 10
	segmentBuffer = writeChunk + writeChunk/2
)

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

// rotate creates segment gen. Shards move to it one by one with exportTo.
func (l *aof) rotate(gen uint64) (*segment, error) {
	seg, err := createSegment(l.fs, l.dir, gen, l.clock(), &l.fsyncs)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	l.bytes.Add(seg.size)
	return seg, nil
}

// exportTo returns an exportFunc that moves each shard it exports to seg.
// The entries it returns are valid until its next call, which reuses their
// memory.
func (l *aof) exportTo(m *shard.Map, seg *segment) exportFunc {
	var buf shard.ExportBuffer
	return func(i int, dst []shard.Entry) []shard.Entry {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.route[i] = seg
		return m.ExportShardTo(i, dst, &buf)
	}
}

// routeAll sends every shard's changes to seg, finishing a rotation a failed
// snapshot left half done.
func (l *aof) routeAll(seg *segment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.route {
		l.route[i] = seg
	}
}

// retire closes and deletes the segments older than gen, which a durable
// snapshot of generation gen has made redundant.
func (l *aof) retire(gen uint64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	var old []*segment
	for len(l.segs) > 0 && l.segs[0].gen < gen {
		old = append(old, l.segs[0])
		l.segs = l.segs[1:]
	}
	l.mu.Unlock()
	var errs []error
	for _, seg := range old {
		if seg.f != nil {
			seg.f.Close()
		}
		if err := l.fs.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("persistence: %w", err))
		}
		l.bytes.Add(-seg.size)
	}
	l.logged.Store(0)
	l.checkLocked()
	return errors.Join(append(errs, syncDir(l.fs, l.dir))...)
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

// dropEmpty undoes the rotation to seg, a failed snapshot's new segment, if
// no write to it ever succeeded past its header: it is closed and deleted,
// and every shard logs to the segment before it again. Otherwise a snapshot
// retried every few seconds on a full disk would leave a file and a
// descriptor each time. If a write to seg failed, its changes are lost from
// the log, so the segment before it takes over the failure: the log stays
// failed until a snapshot holds them. It reports whether it dropped seg.
func (l *aof) dropEmpty(seg *segment) bool {
	l.flushMu.Lock() // no flush is writing to seg now, and none has buffered for it
	defer l.flushMu.Unlock()
	defer l.checkLocked()
	l.mu.Lock()
	n := len(l.segs)
	if n < 2 || l.segs[n-1] != seg || seg.header == 0 || seg.whole != seg.header || len(seg.buf) != 0 {
		l.mu.Unlock()
		return false
	}
	prev := l.segs[n-2]
	if prev.err == nil {
		prev.err = seg.err
	}
	for i := range l.route {
		l.route[i] = prev
	}
	l.segs = l.segs[:n-1]
	l.mu.Unlock()
	if seg.f != nil {
		_ = seg.f.Close()
		seg.f = nil
	}
	_ = l.fs.Remove(seg.path) // best effort: an empty segment replays as nothing
	l.bytes.Add(-seg.size)
	return true
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

// groupCommit runs one flush for any number of concurrent callers: a caller
// waits for a flush that started after it called, and whoever finds none
// running starts one for everyone waiting.
type groupCommit struct {
	flush   func(sync bool) error
	mu      sync.Mutex
	cond    sync.Cond
	started uint64 // flushes started
	done    uint64 // the number of the last flush finished
	running bool
	err     error // the last flush's error
}

// commit returns once a flush that began after the call has finished.
func (g *groupCommit) commit(sync bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond.L == nil {
		g.cond.L = &g.mu
	}
	target := g.started + 1
	for g.done < target {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.started++
		n := g.started
		g.mu.Unlock()
		err := g.flush(sync)
		g.mu.Lock()
		g.running, g.done, g.err = false, n, err
		g.cond.Broadcast()
	}
	return g.err
}
