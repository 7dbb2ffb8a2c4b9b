package persistence

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bucketSum adds up s's buckets, which must account for every fsync.
func bucketSum(s FsyncStats) int64 {
	var n int64
	for _, b := range s.Buckets {
		n += b
	}
	return n
}

func TestFsyncTimerBuckets(t *testing.T) {
	var tm fsyncTimer
	tm.observe(FsyncBound(0), false)                 // on the bound: the first bucket
	tm.observe(FsyncBound(0)+time.Microsecond, true) // just past it: the second
	tm.observe(time.Minute, false)                   // past every bound: the last
	s := tm.stats()
	assert.Equal(t, int64(3), s.Count)
	assert.Equal(t, int64(1), s.Errors)
	assert.Equal(t, 2*FsyncBound(0)+time.Microsecond+time.Minute, s.Total)
	assert.Equal(t, int64(1), s.Buckets[0])
	assert.Equal(t, int64(1), s.Buckets[1])
	assert.Equal(t, int64(1), s.Buckets[FsyncBuckets-1])
	assert.Zero(t, FsyncBound(FsyncBuckets-1))
}

// TestFsyncStatsCommits checks that under appendfsync always every commit's
// fsync is counted and timed, and a snapshot's on its own.
func TestFsyncStatsCommits(t *testing.T) {
	c := newClock()
	st, m, _ := openStore(t, t.TempDir(), c.opts(FsyncAlways))
	defer st.Close()
	before := st.Stats()
	for i := range 5 {
		_, err := m.Decide(fmt.Appendf(nil, "k%d", i), slideP, c.nano(), 1, false)
		require.NoError(t, err)
		require.NoError(t, st.Commit())
	}
	s := st.Stats()
	assert.GreaterOrEqual(t, s.LogFsyncs.Count-before.LogFsyncs.Count, int64(5))
	assert.Equal(t, s.LogFsyncs.Count, bucketSum(s.LogFsyncs))
	assert.Positive(t, s.LogFsyncs.Total)
	assert.Zero(t, s.LogFsyncs.Errors)
	assert.Zero(t, s.SnapshotFsyncs.Count)

	require.NoError(t, st.Snapshot())
	s = st.Stats()
	assert.Equal(t, int64(1), s.SnapshotFsyncs.Count)
	assert.Equal(t, int64(1), bucketSum(s.SnapshotFsyncs))
}

// TestFsyncStatsSlowAndFailing makes the log's fsyncs slow, then failing,
// with ErrorFS: both are still counted, the slow one in a slow bucket.
func TestFsyncStatsSlowAndFailing(t *testing.T) {
	const slow = 30 * time.Millisecond
	efs := vfs.NewErrorFS(vfs.OS)
	c := newClock()
	opts := c.opts(FsyncAlways)
	opts.FS = efs
	st, m, _ := openStore(t, t.TempDir(), opts)
	defer st.Close()
	decide := func(key string) {
		_, err := m.Decide([]byte(key), slideP, c.nano(), 1, false)
		require.NoError(t, err)
	}

	efs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, logSuffix) {
			time.Sleep(slow) // a slow disk, not ordering: the fsync itself takes this long
		}
		return nil
	})
	before := st.Stats().LogFsyncs
	decide("slow")
	require.NoError(t, st.Commit())
	s := st.Stats().LogFsyncs
	require.Equal(t, before.Count+1, s.Count)
	assert.GreaterOrEqual(t, s.Total-before.Total, slow)
	var slowOnes int64
	for i := range FsyncBuckets {
		if b := FsyncBound(i); b == 0 || b >= slow {
			slowOnes += s.Buckets[i] - before.Buckets[i]
		}
	}
	assert.Equal(t, int64(1), slowOnes, "the slow fsync lands in a bucket above %v", slow)

	efs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, logSuffix) {
			return syscall.EIO
		}
		return nil
	})
	decide("failing")
	require.Error(t, st.Commit())
	f := st.Stats().LogFsyncs
	assert.Equal(t, s.Count+1, f.Count, "a failed fsync is counted")
	assert.Equal(t, s.Errors+1, f.Errors)
	assert.Equal(t, f.Count, bucketSum(f))
	efs.Inject(nil)
}
