package persistence

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultRun is what one run of faultScenario saw.
type faultRun struct {
	acked   []string // keys whose change a Commit acknowledged
	failed  bool     // some call returned an error
	refused bool     // Err was not nil at some point
}

// faultScenario opens dir on fsys under appendfsync always, then makes three
// rounds of changes, each key committed on its own, with a snapshot after
// the first two rounds, and closes the store. A key is acknowledged when its
// Commit returned nil, as the server replies then.
func faultScenario(t *testing.T, fsys vfs.FS, dir string, c *clock) faultRun {
	t.Helper()
	var run faultRun
	opts := c.opts(FsyncAlways)
	opts.FS = fsys
	m := newMap(t, 4)
	st, _, err := Open(dir, m, opts)
	if err != nil {
		run.failed = true
		return run
	}
	for round := range 3 {
		for i := range 4 {
			key := fmt.Sprintf("r%d-%d", round, i)
			_, err := m.Decide([]byte(key), slideP, c.nano(), 1, false)
			require.NoError(t, err)
			if st.Err() != nil {
				run.refused = true
			}
			if err := st.Commit(); err != nil {
				run.failed = true
				continue
			}
			run.acked = append(run.acked, key)
		}
		if round < 2 && st.Snapshot() != nil {
			run.failed = true
		}
		c.add(time.Second)
	}
	if st.Close() != nil {
		run.failed = true
	}
	return run
}

// TestFaultAtEveryPoint fails, in turn, each write, fsync, open, rename and
// truncate the scenario makes, with ENOSPC and with EIO, and checks that
// every change a Commit acknowledged is there after a restart, that a
// failure is reported, and that no temp file is left behind.
func TestFaultAtEveryPoint(t *testing.T) {
	ops := []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpOpen, vfs.OpRename, vfs.OpTruncate}
	dry := vfs.NewErrorFS(vfs.OS)
	run := faultScenario(t, dry, t.TempDir(), newClock())
	require.False(t, run.failed)
	require.Len(t, run.acked, 12)
	for _, op := range ops {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			for n := 1; n <= dry.Count(op); n++ {
				t.Run(fmt.Sprintf("%s#%d/%s", op, n, errno), func(t *testing.T) {
					faultAt(t, op, n, errno)
				})
			}
		}
	}
}

func faultAt(t *testing.T, op vfs.Op, n int, errno syscall.Errno) {
	dir := t.TempDir()
	fsys := vfs.NewErrorFS(vfs.OS)
	seen := 0
	fsys.Inject(func(o vfs.Op, path string) error {
		if o == op {
			if seen++; seen == n {
				return errno
			}
		}
		return nil
	})
	c := newClock()
	run := faultScenario(t, fsys, dir, c)
	assert.True(t, run.failed, "the injected %s failure was reported by no call", op)
	assert.Zero(t, fsys.OpenFiles(), "files left open")
	assert.Empty(t, files(t, dir, "*"+tmpSuffix), "temp files left")

	st, m, _ := openStore(t, dir, c.opts(FsyncAlways))
	defer st.Close()
	for _, key := range run.acked {
		_, ok := m.Get([]byte(key), c.nano())
		assert.True(t, ok, "acknowledged key %s lost after %s failed with %s", key, op, errno)
	}
}

// TestFailedCommitRefusesUntilSnapshot checks Err's life: set by a failed
// fsync, kept while the log is broken, cleared by a snapshot, and that the
// failure is logged once, not per commit.
func TestFailedCommitRefusesUntilSnapshot(t *testing.T) {
	fsys := vfs.NewErrorFS(vfs.OS)
	c := newClock()
	opts := c.opts(FsyncAlways)
	opts.FS = fsys
	var logged strings.Builder
	opts.Logger = newTextLogger(&logged)
	st, m, _ := openStore(t, t.TempDir(), opts)
	defer st.Close()
	fsys.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, logSuffix) {
			return syscall.EIO
		}
		return nil
	})
	for i := range 5 {
		_, err := m.Decide(fmt.Appendf(nil, "k%d", i), slideP, c.nano(), 1, false)
		require.NoError(t, err)
		require.Error(t, st.Commit())
	}
	require.ErrorIs(t, st.Err(), syscall.EIO)
	assert.Equal(t, "Input/output error", ErrnoText(st.Err()))
	assert.EqualValues(t, 5, st.Stats().LogWriteErrors)
	assert.Equal(t, 1, strings.Count(logged.String(), "cannot be written"), logged.String())

	fsys.Inject(nil)
	require.NoError(t, st.Snapshot())
	require.NoError(t, st.Err())
	require.NoError(t, st.Commit())
	assert.Equal(t, 1, strings.Count(logged.String(), "written again"), logged.String())
}

// TestFailedSnapshotLeavesNothing retries a snapshot on a full disk many
// times: no log segment, temp file or descriptor may pile up.
func TestFailedSnapshotLeavesNothing(t *testing.T) {
	for _, name := range []string{"snapshot only", "log too"} {
		t.Run(name, func(t *testing.T) {
			fsys := vfs.NewErrorFS(vfs.OS)
			c := newClock()
			opts := c.opts(FsyncEverysec)
			opts.FS = fsys
			dir := t.TempDir()
			st, m, _ := openStore(t, dir, opts)
			defer st.Close()
			fsys.Inject(func(op vfs.Op, path string) error {
				full := strings.HasSuffix(path, snapSuffix+tmpSuffix) || name == "log too"
				if op == vfs.OpWrite && full {
					return syscall.ENOSPC
				}
				return nil
			})
			segs, open := len(files(t, dir, "log-*")), fsys.OpenFiles()
			for i := range 20 {
				_, err := m.Decide(fmt.Appendf(nil, "k%d", i), slideP, c.nano(), 1, false)
				require.NoError(t, err)
				st.tick()
				require.Error(t, st.Snapshot())
			}
			// tick starts a background snapshot to recover from the failing
			// log; under load it may still be writing (or not yet started),
			// and would race the checks below and the last Snapshot.
			require.Eventually(t, func() bool { return !st.bg.Load() }, 10*time.Second, time.Millisecond,
				"the background snapshot tick started ends")
			assert.LessOrEqual(t, len(files(t, dir, "log-*")), segs+1, "log segments pile up")
			assert.LessOrEqual(t, fsys.OpenFiles(), open+1, "descriptors pile up")
			assert.Empty(t, files(t, dir, "*"+tmpSuffix))
			if name == "log too" {
				require.ErrorIs(t, st.Err(), syscall.ENOSPC)
			}
			fsys.Inject(nil)
			require.NoError(t, st.Snapshot())
			require.NoError(t, st.Err())
			assert.Len(t, files(t, dir, "log-*"), 1)
		})
	}
}

// TestDeletedDirIsNoticed deletes the data directory under a running
// store: Err reports it at the next tick, and a snapshot recreates it, so
// a restart finds the state.
func TestDeletedDirIsNoticed(t *testing.T) {
	c := newClock()
	dir := filepath.Join(t.TempDir(), "data")
	recreated := 0
	opts := c.opts(FsyncEverysec)
	opts.DirRecreated = func() { recreated++ }
	st, m, _ := openStore(t, dir, opts)
	_, err := m.Decide([]byte("a"), slideP, c.nano(), 1, false)
	require.NoError(t, err)
	st.tick()
	require.NoError(t, st.Snapshot()) // a snapshot just now must not delay the recovery
	require.NoError(t, st.Err())

	require.NoError(t, removeAll(dir))
	st.tick() // notices, recreates the directory and starts a snapshot at once
	require.ErrorIs(t, st.Err(), ErrDirGone)
	assert.Equal(t, "the data directory was deleted", ErrnoText(st.Err()))
	require.Eventually(t, func() bool { return st.Stats().Saves == 2 && !st.Stats().Saving }, 5*time.Second, time.Millisecond)
	st.tick()
	require.NoError(t, st.Err())
	assert.Equal(t, 1, recreated)
	_, err = m.Decide([]byte("b"), slideP, c.nano(), 1, false)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	st2, m2, _ := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	for _, k := range []string{"a", "b"} {
		_, ok := m2.Get([]byte(k), c.nano())
		assert.True(t, ok, "key %s lost", k)
	}
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func removeAll(dir string) error { return os.RemoveAll(dir) }
