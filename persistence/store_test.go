package persistence

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flushLog writes and fsyncs the log now, as the background loop would.
func flushLog(t testing.TB, st *Store) {
	t.Helper()
	require.NoError(t, st.log.group.commit(true))
}

func TestStoreRoundTrip(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, rec := openStore(t, dir, c.opts(FsyncEverysec))
	assert.Zero(t, rec.Keys)
	assert.Empty(t, rec.Snapshot)
	r := rand.New(rand.NewPCG(1, 1))

	traffic(t, st.m.Decide, r, 500, 5000, c.nano())
	flushLog(t, st)
	require.NoError(t, st.Snapshot())
	traffic(t, st.m.Decide, r, 800, 5000, c.nano()) // logged only
	for k := range 50 {
		st.m.Delete(fmt.Appendf(nil, "key:%d", k))
	}
	flushLog(t, st)
	traffic(t, st.m.Decide, r, 800, 1000, c.nano()) // written by Close
	want := liveAt(m, c.nano())
	require.NoError(t, st.Close())
	assert.ErrorIs(t, st.Close(), ErrClosed)

	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
	assert.Equal(t, int64(len(want)), rec.Keys)
	assert.NotEmpty(t, rec.Snapshot)
	assert.Len(t, rec.Logs, 1, "the snapshot deleted the segments before it")
	assert.Positive(t, rec.Records)
	assert.Empty(t, rec.Warnings)
	assert.Equal(t, rec.Keys, st2.Stats().KeysLoaded)
	assert.Equal(t, c.now(), st2.Stats().LastSave, "LASTSAVE survives a restart")
}

// TestStoreExpiry: state that expired while the server was down is not loaded,
// from the snapshot or from the log.
func TestStoreExpiry(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	r := rand.New(rand.NewPCG(2, 2))
	traffic(t, st.m.Decide, r, 300, 3000, c.nano())
	require.NoError(t, st.Snapshot())
	traffic(t, st.m.Decide, r, 600, 3000, c.nano())
	require.NoError(t, st.Close())

	c.add(3 * time.Minute)
	want := liveAt(m, c.nano())
	require.NotEmpty(t, want)
	require.Less(t, len(want), len(liveAt(m, c.nano()-int64(3*time.Minute))))
	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
	assert.Equal(t, int64(len(want)), rec.Keys)
}

// TestStoreTornTail: a torn last record is cut off with a warning and the
// start succeeds with everything before it.
func TestStoreTornTail(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	r := rand.New(rand.NewPCG(3, 3))
	traffic(t, st.m.Decide, r, 200, 1000, c.nano())
	flushLog(t, st)
	want := liveAt(m, c.nano())
	_, err := st.m.Decide([]byte("lost"), tokenP, c.nano(), 1, false) // the last block holds only this
	require.NoError(t, err)
	require.NoError(t, st.Close())

	segs := files(t, dir, "log-*.rla")
	last := segs[len(segs)-1]
	info, err := os.Stat(last)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(last, info.Size()-3))

	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	require.Len(t, rec.Warnings, 1)
	w := rec.Warnings[0]
	assert.Equal(t, filepath.Base(last), w.File)
	assert.Contains(t, w.String(), "truncated a torn last record")
	assert.Equal(t, want, exportAll(m2), "everything but the torn record")
	_, ok := m2.Get([]byte("lost"), c.nano())
	assert.False(t, ok)
	after, err := os.Stat(last)
	require.NoError(t, err)
	assert.Equal(t, w.Offset, after.Size(), "the torn tail is cut off on disk")
	require.NoError(t, st2.Close())

	_, _, rec = openStore(t, dir, c.opts(FsyncEverysec))
	assert.Empty(t, rec.Warnings, "a second start finds nothing to repair")
}

func TestStoreZeroFilledTail(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	traffic(t, st.m.Decide, rand.New(rand.NewPCG(4, 4)), 100, 500, c.nano())
	want := liveAt(m, c.nano())
	require.NoError(t, st.Close())
	segs := files(t, dir, "log-*.rla")
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 4096))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	require.Len(t, rec.Warnings, 1)
	assert.Equal(t, "zero-filled tail", rec.Warnings[0].Reason)
	assert.Equal(t, want, exportAll(m2))
}

// logWithBlocks leaves dir with a log segment of several blocks and returns its path.
func logWithBlocks(t *testing.T, dir string, c *clock) string {
	st, _, _ := openStore(t, dir, c.opts(FsyncEverysec))
	r := rand.New(rand.NewPCG(5, 5))
	for range 4 {
		traffic(t, st.m.Decide, r, 200, 500, c.nano())
		flushLog(t, st)
	}
	require.NoError(t, st.Close())
	segs := files(t, dir, "log-*.rla")
	return segs[len(segs)-1]
}

// requireCorrupt checks that Open refuses dir with a message naming the file and offset.
func requireCorrupt(t *testing.T, dir, file string, off int64) {
	t.Helper()
	_, _, err := Open(dir, newMap(t, 4), newClock().opts(FsyncEverysec))
	var ce *CorruptError
	require.Truef(t, errors.As(err, &ce), "Open = %v, want a *CorruptError", err)
	assert.Equal(t, filepath.Base(file), ce.File)
	assert.Contains(t, err.Error(), filepath.Base(file))
	assert.Contains(t, err.Error(), fmt.Sprintf("at byte %d", ce.Offset))
	assert.LessOrEqual(t, ce.Offset, off, "the error points at or before the flipped byte")
	assert.Greater(t, ce.Offset+blockBytes, off)
}

func TestStoreCorruptLog(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	path := logWithBlocks(t, dir, c)
	info, err := os.Stat(path)
	require.NoError(t, err)
	mid := info.Size() / 2
	flipByte(t, path, mid)
	requireCorrupt(t, dir, path, mid)
	flipByte(t, path, mid) // undo: the start works again
	st, _, rec := openStore(t, dir, c.opts(FsyncEverysec))
	assert.Empty(t, rec.Warnings)
	require.NoError(t, st.Close())
}

func TestStoreCorruptSnapshot(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, _, _ := openStore(t, dir, c.opts(FsyncEverysec))
	traffic(t, st.m.Decide, rand.New(rand.NewPCG(6, 6)), 5000, 20000, c.nano())
	require.NoError(t, st.Snapshot())
	require.NoError(t, st.Close())
	snaps := files(t, dir, "snap-*.rls")
	require.Len(t, snaps, 1)
	info, err := os.Stat(snaps[0])
	require.NoError(t, err)
	flipByte(t, snaps[0], info.Size()/2)
	requireCorrupt(t, dir, snaps[0], info.Size()/2)

	flipByte(t, snaps[0], info.Size()/2)
	require.NoError(t, os.Truncate(snaps[0], info.Size()-1))
	requireCorrupt(t, dir, snaps[0], info.Size())
}

// TestStoreFlush: FLUSHALL is logged, and only what came after it is loaded.
func TestStoreFlush(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	r := rand.New(rand.NewPCG(7, 7))
	traffic(t, st.m.Decide, r, 300, 2000, c.nano())
	require.NoError(t, st.Snapshot())
	traffic(t, st.m.Decide, r, 300, 2000, c.nano()) // pending in the feed at the flush
	require.NoError(t, st.Flush())
	assert.Zero(t, m.Len())
	traffic(t, st.m.Decide, r, 20, 50, c.nano())
	want := liveAt(m, c.nano())
	require.NoError(t, st.Close())

	st2, m2, _ := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
}

// TestStoreSnapshotWhileWriting takes snapshots while decisions and log
// flushes run, and checks every state a crash could leave: before the new
// snapshot is renamed into place (old snapshot, old and new segments), after
// it but before the old segments are deleted, and after.
func TestStoreSnapshotWhileWriting(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	r := rand.New(rand.NewPCG(8, 8))
	traffic(t, st.m.Decide, r, 2000, 10000, c.nano())
	require.NoError(t, st.Snapshot())
	before := copyDir(t, dir) // the old snapshot and its segment

	var written string // the dir as a crash just before the rename would leave it
	st.snapshotWritten = func() {
		flushLog(t, st)
		written = copyDir(t, dir)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // decisions and flushes racing the snapshot
		defer close(done)
		r := rand.New(rand.NewPCG(9, 9))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			traffic(t, st.m.Decide, r, 3000, 50, c.nano())
			if i%7 == 0 {
				st.m.Delete(fmt.Appendf(nil, "key:%d", r.IntN(3000)))
			}
			if i%5 == 0 {
				_ = st.log.group.commit(true)
			}
		}
	}()
	require.NoError(t, st.Snapshot())
	close(stop)
	<-done
	require.NoError(t, st.Close())
	want := liveAt(m, c.nano())

	newSnap := files(t, dir, "snap-*.rls")
	require.Len(t, newSnap, 1)
	segs := files(t, dir, "log-*.rla")
	require.Len(t, segs, 1)

	crashes := map[string]string{"after": dir}
	// Before the rename: the old snapshot and segments as they were, plus the new segment as it ended.
	beforeRename := copyDir(t, written)
	require.NoError(t, os.Remove(filepath.Join(beforeRename, filepath.Base(newSnap[0]))))
	copyFile(t, segs[0], beforeRename)
	crashes["before rename"] = beforeRename
	// After the rename, before the old segments are deleted.
	notRetired := copyDir(t, dir)
	for _, old := range files(t, before, "log-*.rla") {
		copyFile(t, old, notRetired)
	}
	copyFile(t, files(t, before, "snap-*.rls")[0], notRetired)
	crashes["before retiring"] = notRetired

	for name, d := range crashes {
		st, m2, _ := openStore(t, d, c.opts(FsyncEverysec))
		assert.Equalf(t, want, exportAll(m2), "crash %s", name)
		require.NoError(t, st.Close())
	}
}

func copyFile(t *testing.T, src, dir string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o600))
}

// TestStoreCommitAlways: under FsyncAlways a change is on disk once Commit
// returns, and concurrent commits share flushes.
func TestStoreCommitAlways(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncAlways))
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				_, err := st.m.Decide(fmt.Appendf(nil, "w%d:%d", w, i), tokenP, c.nano(), 1, false)
				require.NoError(t, err)
				require.NoError(t, st.Commit())
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, st.log.group.started, uint64(workers*each))
	crashed := copyDir(t, dir) // as kill -9 would leave it: nothing more is written
	st2, m2, _ := openStore(t, crashed, c.opts(FsyncAlways))
	assert.Equal(t, exportAll(m), exportAll(m2))
	require.NoError(t, st2.Close())
	require.NoError(t, st.Close())
	assert.ErrorIs(t, st.Commit(), ErrClosed)
}

func TestStoreCommitOtherModes(t *testing.T) {
	for _, f := range []FsyncMode{FsyncEverysec, FsyncNo} {
		st, _, _ := openStore(t, t.TempDir(), newClock().opts(f))
		assert.NoError(t, st.Commit())
		assert.Zero(t, st.log.group.started, "Commit under %v wrote the log", f)
		require.NoError(t, st.Close())
	}
}

func TestStoreLocked(t *testing.T) {
	dir := t.TempDir()
	st, _, _ := openStore(t, dir, newClock().opts(FsyncEverysec))
	_, _, err := Open(dir, newMap(t, 1), Options{})
	assert.ErrorIs(t, err, ErrLocked)
	require.NoError(t, st.Close())
	st, _, _ = openStore(t, dir, newClock().opts(FsyncEverysec))
	require.NoError(t, st.Close())
}

// TestStoreBackground: with no Commit and no Close, the background loop writes
// the log within a flush interval or so, and snapshots once the log is big.
func TestStoreBackground(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	opts := c.opts(FsyncEverysec)
	opts.FlushInterval, opts.SnapshotLogBytes = 10*time.Millisecond, 64<<10
	st, m, _ := openStore(t, dir, opts)
	defer st.Close()
	traffic(t, st.m.Decide, rand.New(rand.NewPCG(10, 10)), 5000, 20000, c.nano())
	want := liveAt(m, c.nano())
	flushes := func() (started, done uint64) {
		st.log.group.mu.Lock()
		defer st.log.group.mu.Unlock()
		return st.log.group.started, st.log.group.done
	}
	after, _ := flushes()
	require.Eventually(t, func() bool { return st.Stats().Saves > 0 && !st.Stats().Saving }, 10*time.Second, 5*time.Millisecond)
	// A whole background flush began after the traffic. (FsyncLag stays 0
	// on the fake clock, and a snapshot taken during the traffic leaves the
	// changes after it to the log.)
	require.Eventually(t, func() bool {
		_, done := flushes()
		return done > after && st.Stats().FsyncLag == 0 && !st.Stats().LastFsync.IsZero()
	}, 10*time.Second, 5*time.Millisecond)

	crashed := copyDir(t, dir)
	st2, m2, _ := openStore(t, crashed, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
	s := st.Stats()
	assert.NoError(t, s.LastSaveErr)
	assert.NoError(t, s.LogErr)
	assert.Positive(t, s.SnapshotBytes)
	assert.Equal(t, FsyncEverysec, s.Fsync)
}

func TestStoreBackgroundSnapshot(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, _, _ := openStore(t, dir, c.opts(FsyncNo))
	traffic(t, st.m.Decide, rand.New(rand.NewPCG(11, 11)), 100, 1000, c.nano())
	require.True(t, st.BackgroundSnapshot())
	require.Eventually(t, func() bool { return st.Stats().Saves == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, st.Close())
	assert.False(t, st.BackgroundSnapshot())
	assert.ErrorIs(t, st.Snapshot(), ErrClosed)
	assert.ErrorIs(t, st.Flush(), ErrClosed)
}

func TestStoreStats(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, _, _ := openStore(t, dir, c.opts(FsyncEverysec))
	traffic(t, st.m.Decide, rand.New(rand.NewPCG(12, 12)), 100, 1000, c.nano())
	flushLog(t, st)
	s := st.Stats()
	assert.Equal(t, int64(100), s.ChangesLogged)
	assert.Positive(t, s.LogBytes)
	assert.Zero(t, s.FsyncLag)
	assert.Equal(t, c.now(), s.LastFsync)
	assert.True(t, s.LastSave.IsZero())

	require.NoError(t, st.Snapshot())
	s = st.Stats()
	assert.Zero(t, s.ChangesLogged)
	assert.Equal(t, c.now(), s.LastSave)
	assert.Equal(t, int64(1), s.Saves)
	assert.Less(t, s.LogBytes, int64(100), "the snapshot replaced the log")
	require.NoError(t, st.Close())
}

func TestParseFsync(t *testing.T) {
	for _, f := range []FsyncMode{FsyncAlways, FsyncEverysec, FsyncNo} {
		got, err := ParseFsync(f.String())
		require.NoError(t, err)
		assert.Equal(t, f, got)
	}
	_, err := ParseFsync("sometimes")
	assert.Error(t, err)
}

var _ = shard.ErrFull

// TestStoreLogFailure: once a log write fails, Commit and Stats report it,
// and the next snapshot starts a fresh log that works.
func TestStoreLogFailure(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncAlways))
	r := rand.New(rand.NewPCG(13, 13))
	traffic(t, st.m.Decide, r, 100, 500, c.nano())
	require.NoError(t, st.Commit())
	st.log.mu.Lock()
	require.NoError(t, st.log.segs[len(st.log.segs)-1].f.Close()) // the disk goes away
	st.log.mu.Unlock()

	traffic(t, st.m.Decide, r, 100, 500, c.nano())
	assert.Error(t, st.Commit())
	assert.Error(t, st.Commit(), "the failure sticks")
	assert.Error(t, st.Stats().LogErr)

	require.NoError(t, st.Snapshot())
	assert.NoError(t, st.Stats().LogErr)
	traffic(t, st.m.Decide, r, 100, 500, c.nano())
	require.NoError(t, st.Commit())
	want := liveAt(m, c.nano())
	require.NoError(t, st.Close())

	st2, m2, _ := openStore(t, dir, c.opts(FsyncAlways))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
}

// TestStoreLeftovers: a crash can leave a half-written snapshot temp file, and
// a snapshot and segments older than the newest snapshot; Open cleans up.
func TestStoreLeftovers(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	traffic(t, st.m.Decide, rand.New(rand.NewPCG(14, 14)), 100, 500, c.nano())
	require.NoError(t, st.Snapshot())
	require.NoError(t, st.Close())
	want := liveAt(m, c.nano())
	tmp := filepath.Join(dir, snapName(99)+tmpSuffix)
	old := []string{filepath.Join(dir, snapName(0)), filepath.Join(dir, logName(0))}
	for _, p := range append(old, tmp) {
		require.NoError(t, os.WriteFile(p, []byte("junk"), 0o600))
	}
	polTmp := filepath.Join(dir, policiesName+tmpSuffix)
	require.NoError(t, os.WriteFile(polTmp, nil, 0o600))

	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
	assert.Empty(t, rec.Warnings)
	for _, p := range append(old, tmp) {
		assert.NoFileExists(t, p)
	}
	assert.FileExists(t, polTmp, "the policy store's temp file is not the Store's")
}
