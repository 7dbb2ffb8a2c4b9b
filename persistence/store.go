package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
)

// Defaults for Options.
const (
	DefaultFlushInterval    = time.Second
	DefaultSnapshotInterval = 5 * time.Minute
	DefaultSnapshotLogBytes = 64 << 20
	DefaultRetryInterval    = 5 * time.Second
)

// ErrClosed is returned by a Store's methods after Close.
var ErrClosed = errors.New("persistence: store closed")

// Options configures a Store. The zero Options is valid: Open fills in every default.
type Options struct {
	Fsync         FsyncMode     // default FsyncEverysec
	FlushInterval time.Duration // how often the log is written (and fsynced for everysec); default 1s
	// SnapshotInterval is how often a snapshot is taken; default 5m, negative: only on request.
	SnapshotInterval time.Duration
	// SnapshotLogBytes: a snapshot is also taken once the log reaches this size
	// and the size of the last snapshot. Default 64 MiB; negative: never.
	SnapshotLogBytes int64
	// RetryInterval is how often a snapshot is retried while the log or the
	// last snapshot has failed, to start a fresh log. Default 5s.
	RetryInterval time.Duration
	Clock         func() time.Time // default time.Now
	Logger        *slog.Logger     // for failures in the background; default slog.Default()
	FS            vfs.FS           // the file system; default vfs.OS (tests inject faults)
	// DirRecreated, if set, is called after a data directory deleted while in
	// use has been made again, before the snapshot that refills it, so the
	// caller can rewrite what else it keeps there (the policy file).
	DirRecreated func()
}

func (o *Options) fill() error {
	if o.Fsync > FsyncNo || o.FlushInterval < 0 {
		return errors.New("persistence: bad options")
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.SnapshotInterval == 0 {
		o.SnapshotInterval = DefaultSnapshotInterval
	}
	if o.SnapshotLogBytes == 0 {
		o.SnapshotLogBytes = DefaultSnapshotLogBytes
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.FS == nil {
		o.FS = vfs.OS
	}
	return nil
}

// Recovery describes what Open loaded.
type Recovery struct {
	Keys     int64         // keys in the Map after loading
	Duration time.Duration // time taken to load
	Snapshot string        // the snapshot file loaded, "" if none
	Logs     []string      // the log segments replayed, in order
	Records  int64         // log records applied
	Warnings []Warning     // torn tails truncated: log each
}

// Store keeps a shard.Map durable in a data directory: a snapshot of every key,
// and a log of the keys changed since, written by a background loop once per
// flush interval (and at each Commit under FsyncAlways). A snapshot rotates the
// log, so the log stays about as small as the changes since the last snapshot.
//
// Every change the Map records (see shard.Map.TrackChanges) is logged, however
// it was made; FLUSHALL must go through the Store's Flush to be logged. A Store
// is made with Open and is safe for concurrent use.
type Store struct {
	fs     vfs.FS
	dir    string
	m      *shard.Map
	opts   Options
	log    *aof
	feed   *Feed // the one drainer of m's changes: the log subscribes to it
	lock   *os.File
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	snapMu   sync.Mutex  // held while a snapshot is written, and by Flush
	saving   atomic.Bool // a snapshot is being written
	bg       atomic.Bool // a background snapshot is running
	loaded   Recovery
	statsMu  sync.Mutex // guards the fields below
	lastSave saveInfo
	tried    time.Time // when the last snapshot was attempted
	// failedTry is when the last failed snapshot (or recreation of the data
	// directory) was attempted; zero once one succeeds. A failure retries
	// RetryInterval after it, and a new failure at once.
	failedTry time.Time

	dirErr       atomic.Pointer[error] // ErrDirGone while the data directory is deleted
	failingSince atomic.Int64          // unix ns when the log began to fail; 0 if it is not failing
	snapFsyncs   fsyncTimer            // the snapshots' fsyncs

	snapshotWritten func() // tests: runs between writing a snapshot and deleting the old log
}

// saveInfo is the last snapshot's outcome.
type saveInfo struct {
	at       time.Time
	duration time.Duration
	bytes    int64
	err      error
	saves    int64
}

// Open opens (creating if needed) the data directory dir, loads its snapshot
// and replays its log into m, which should be empty, then starts logging the
// changes made to m. State expired at the clock's now is dropped. A
// torn last record of a log segment is truncated and reported in Recovery;
// any other damage is a *CorruptError naming the file and offset.
func Open(dir string, m *shard.Map, opts Options) (*Store, Recovery, error) {
	if err := opts.fill(); err != nil {
		return nil, Recovery{}, err
	}
	if err := opts.FS.MkdirAll(dir, 0o700); err != nil {
		return nil, Recovery{}, fmt.Errorf("persistence: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, lockName))
	if err != nil {
		return nil, Recovery{}, err
	}
	st := &Store{fs: opts.FS, dir: dir, m: m, opts: opts, lock: lock}
	segs, err := st.load()
	if err != nil {
		lock.Close()
		return nil, st.loaded, err
	}
	st.feed = NewFeed(m)
	st.log = newAOF(st.fs, dir, m, st.feed, st.now, segs)
	st.log.onChange = st.logChange
	ctx, cancel := context.WithCancel(context.Background())
	st.cancel = cancel
	st.wg.Add(1)
	go st.run(ctx)
	return st, st.loaded, nil
}

func (st *Store) now() int64 { return st.opts.Clock().UnixNano() }

// Feed returns the drainer of the Map's changes the log reads from, for
// another subscriber (the replica shipper) to share.
func (st *Store) Feed() *Feed { return st.feed }

// load loads the newest snapshot and replays the segments after it, then
// starts a new segment. It returns the live segments, the new one last.
func (st *Store) load() ([]*segment, error) {
	start := time.Now()
	names, err := listDir(st.fs, st.dir)
	if err == nil {
		err = removeTemps(st.fs, st.dir, names)
	}
	if err != nil {
		return nil, err
	}
	snaps, logs := generations(names, snapPrefix, snapSuffix), generations(names, logPrefix, logSuffix)
	var gen uint64
	if len(snaps) > 0 {
		gen = snaps[len(snaps)-1]
		if err := st.loadSnapshot(gen); err != nil {
			return nil, err
		}
	}
	segs, err := st.replay(gen, logs)
	if err != nil {
		return nil, err
	}
	if err := st.removeBefore(gen, snaps, logs); err != nil {
		return nil, err
	}
	next := gen
	if len(logs) > 0 {
		next = max(next, logs[len(logs)-1])
	}
	seg, err := createSegment(st.fs, st.dir, next+1, st.now(), nil) // the log's timer does not exist yet
	if err != nil {
		return nil, err
	}
	st.loaded.Keys, st.loaded.Duration = st.m.Len(), time.Since(start)
	return append(segs, seg), nil
}

func (st *Store) loadSnapshot(gen uint64) error {
	name := snapName(gen)
	info, err := loadSnapshotFile(st.fs, filepath.Join(st.dir, name), st.m, st.now())
	if err != nil {
		return err
	}
	st.loaded.Snapshot = name
	st.lastSave = saveInfo{at: time.Unix(0, info.created), bytes: info.bytes}
	return nil
}

// replay applies the segments of generation gen or later, returning them as
// segments that are kept, not written, until the next snapshot.
func (st *Store) replay(gen uint64, logs []uint64) ([]*segment, error) {
	var segs []*segment
	for _, g := range logs {
		if g < gen {
			continue
		}
		path := filepath.Join(st.dir, logName(g))
		size, n, warn, err := replayLogFile(st.fs, path, st.m, st.now())
		if err != nil {
			return nil, err
		}
		if warn != nil {
			st.loaded.Warnings = append(st.loaded.Warnings, *warn)
		}
		st.loaded.Logs = append(st.loaded.Logs, logName(g))
		st.loaded.Records += n
		segs = append(segs, &segment{gen: g, path: path, size: size, synced: size, whole: size})
	}
	return segs, nil
}

// removeBefore deletes the snapshots and segments older than gen, which a
// crash after writing snapshot gen left behind.
func (st *Store) removeBefore(gen uint64, snaps, logs []uint64) error {
	var errs []error
	for _, g := range snaps {
		if g < gen {
			errs = append(errs, st.fs.Remove(filepath.Join(st.dir, snapName(g))))
		}
	}
	for _, g := range logs {
		if g < gen {
			errs = append(errs, st.fs.Remove(filepath.Join(st.dir, logName(g))))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	return nil
}

// Commit makes the changes made to the Map before the call durable.
// Under FsyncAlways the server calls it before replying to a batch of
// commands; concurrent callers share one write and one fsync. Under the other
// modes it returns at once: the background loop writes the log.
func (st *Store) Commit() error {
	if st.opts.Fsync != FsyncAlways {
		return nil
	}
	if st.closed.Load() {
		return ErrClosed
	}
	return st.log.group.commit(true)
}

// Flush deletes every key (FLUSHALL) and logs that it did.
func (st *Store) Flush() error {
	if st.closed.Load() {
		return ErrClosed
	}
	st.snapMu.Lock() // no snapshot half way, so every shard logs to the newest segment
	defer st.snapMu.Unlock()
	if st.closed.Load() {
		return ErrClosed
	}
	return st.log.appendFlush(st.m.Flush, st.opts.Fsync == FsyncAlways)
}

// Snapshot writes a snapshot of every key (SAVE), then deletes the log it
// makes redundant. It waits for a snapshot already being written.
func (st *Store) Snapshot() error {
	if st.closed.Load() {
		return ErrClosed
	}
	st.snapMu.Lock()
	defer st.snapMu.Unlock()
	if st.closed.Load() {
		return ErrClosed
	}
	st.saving.Store(true)
	defer st.saving.Store(false)
	start := time.Now()
	info, err := st.snapshot()
	st.statsMu.Lock()
	defer st.statsMu.Unlock()
	st.tried = start
	st.lastSave.err = err
	st.failedTry = time.Time{}
	if err != nil {
		st.failedTry = start
	}
	if err == nil {
		st.lastSave = saveInfo{at: time.Unix(0, info.created), duration: time.Since(start), bytes: info.bytes, saves: st.lastSave.saves + 1}
	}
	return err
}

func (st *Store) snapshot() (snapInfo, error) {
	gen := st.log.lastGen() + 1
	seg, err := st.log.rotate(gen)
	if err != nil {
		return snapInfo{}, err
	}
	path := filepath.Join(st.dir, snapName(gen))
	info, err := writeSnapshot(st.fs, path, st.m.Shards(), st.log.exportTo(st.m, seg), gen, st.now(), &st.snapFsyncs)
	if err != nil {
		st.log.routeAll(seg)
		// A snapshot renamed into place, whose directory fsync failed, is
		// loaded by the next start, and only seg's changes follow it then.
		if _, serr := st.fs.Stat(path); errors.Is(serr, os.ErrNotExist) {
			st.log.dropEmpty(seg)
		}
		return info, err
	}
	if st.snapshotWritten != nil {
		st.snapshotWritten()
	}
	names, err := listDir(st.fs, st.dir)
	if err == nil {
		err = st.removeBefore(gen, generations(names, snapPrefix, snapSuffix), nil)
	}
	return info, errors.Join(err, st.log.retire(gen))
}

// BackgroundSnapshot starts a snapshot in the background (BGSAVE) and reports
// whether it did: false if one is already being written or the Store is closed.
func (st *Store) BackgroundSnapshot() bool {
	if st.closed.Load() || !st.bg.CompareAndSwap(false, true) {
		return false
	}
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		defer st.bg.Store(false)
		st.statsMu.Lock()
		was := st.lastSave.err
		st.statsMu.Unlock()
		switch err := st.Snapshot(); {
		case err == nil || errors.Is(err, ErrClosed):
		case was == nil: // once per run of failures; INFO persistence shows the rest
			st.opts.Logger.Error("background snapshot failed; retrying", "dir", st.dir, "every", st.opts.RetryInterval, "err", err)
		default:
			st.opts.Logger.Debug("background snapshot failed again", "dir", st.dir, "err", err)
		}
	}()
	return true
}

// run writes the log every flush interval and takes snapshots when due, until ctx is done.
func (st *Store) run(ctx context.Context) {
	defer st.wg.Done()
	t := time.NewTicker(st.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st.tick()
	}
}

// tick writes the log, checks the data directory and starts a snapshot if
// one is due: on schedule, or to recover from a failure.
func (st *Store) tick() {
	err := st.log.group.commit(st.opts.Fsync != FsyncNo)
	derr := st.checkDir()
	st.setDirErr(derr)
	failing := err != nil || derr != nil
	if !st.snapshotDue(failing) {
		return
	}
	if derr != nil {
		if rerr := st.recreateDir(); rerr != nil {
			st.statsMu.Lock()
			st.tried, st.failedTry = st.opts.Clock(), st.opts.Clock()
			st.statsMu.Unlock()
			st.opts.Logger.Debug("recreating the data directory failed", "dir", st.dir, "err", rerr)
			return
		}
	}
	st.BackgroundSnapshot()
}

// snapshotDue reports whether the interval or the log's size calls for a
// snapshot, or a failing log for a retry.
func (st *Store) snapshotDue(failing bool) bool {
	st.statsMu.Lock()
	defer st.statsMu.Unlock()
	now := st.opts.Clock()
	if failing || st.lastSave.err != nil {
		return st.failedTry.IsZero() || now.Sub(st.failedTry) >= st.opts.RetryInterval
	}
	last := st.lastSave.at
	if st.tried.After(last) {
		last = st.tried
	}
	if st.opts.SnapshotInterval > 0 && now.Sub(last) >= st.opts.SnapshotInterval && st.log.logged.Load() > 0 {
		return true
	}
	size := st.log.bytes.Load()
	return st.opts.SnapshotLogBytes > 0 && size >= st.opts.SnapshotLogBytes && size >= st.lastSave.bytes
}

// Close stops the background loop, waits for a snapshot being written, writes
// and fsyncs the log whatever the fsync mode, so a clean shutdown loses
// nothing, and releases the directory. Take a Snapshot first to make the next
// start quicker (SHUTDOWN SAVE).
func (st *Store) Close() error {
	if st.closed.Swap(true) {
		return ErrClosed
	}
	st.cancel()
	st.wg.Wait()
	st.snapMu.Lock()
	defer st.snapMu.Unlock()
	err := st.log.close()
	return errors.Join(err, st.lock.Close())
}

// Stats is what INFO persistence reports.
type Stats struct {
	Fsync            FsyncMode
	KeysLoaded       int64         // keys in the Map after Open loaded it
	LoadDuration     time.Duration // how long Open took to load
	Saving           bool          // a snapshot is being written
	LastSave         time.Time     // when the last snapshot written or loaded was taken (LASTSAVE); zero if none
	LastSaveDuration time.Duration
	LastSaveErr      error // the last snapshot's failure; nil if it succeeded
	Saves            int64 // snapshots written since Open
	SnapshotBytes    int64 // size of the last snapshot
	LogBytes         int64 // size of the live log segments
	LogErr           error // a failed log write or fsync, until a snapshot starts a fresh log
	ChangesLogged    int64 // entries logged since the last snapshot
	LastFsync        time.Time
	FsyncLag         time.Duration // age of the oldest log write not yet fsynced; 0 if none
	LogWriteErrors   int64         // log writes and commits that failed since Open
	FailingSince     time.Time     // when the log began to fail; zero if it is not failing
	LogFsyncs        FsyncStats    // the log segments' fsyncs since Open
	SnapshotFsyncs   FsyncStats    // the snapshot files' fsyncs since Open
	Err              error         // what Err returns: changes are refused while it is not nil
}

// Stats returns the Store's current figures.
func (st *Store) Stats() Stats {
	s := Stats{
		Fsync:          st.opts.Fsync,
		KeysLoaded:     st.loaded.Keys,
		LoadDuration:   st.loaded.Duration,
		Saving:         st.saving.Load(),
		LogBytes:       st.log.bytes.Load(),
		ChangesLogged:  st.log.logged.Load(),
		LogErr:         st.log.broken(),
		LogWriteErrors: st.log.errors.Load(),
		Err:            st.Err(),
		LogFsyncs:      st.log.fsyncs.stats(),
		SnapshotFsyncs: st.snapFsyncs.stats(),
	}
	if t := st.failingSince.Load(); t != 0 {
		s.FailingSince = time.Unix(0, t)
	}
	if t := st.log.fsynced.Load(); t != 0 {
		s.LastFsync = time.Unix(0, t)
	}
	if t := st.log.unsynced.Load(); t != 0 {
		s.FsyncLag = max(0, time.Duration(st.now()-t))
	}
	st.statsMu.Lock()
	defer st.statsMu.Unlock()
	s.LastSave, s.LastSaveDuration, s.LastSaveErr = st.lastSave.at, st.lastSave.duration, st.lastSave.err
	s.Saves, s.SnapshotBytes = st.lastSave.saves, st.lastSave.bytes
	return s
}
