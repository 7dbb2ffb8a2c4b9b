package server

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startDurableFS runs a server over a persistence.Store in a temp dir on
// fsys under appendfsync always, and returns the server too.
func startDurableFS(t *testing.T, fsys vfs.FS) (*Server, string) {
	t.Helper()
	m, err := shard.New(shard.Config{Shards: 16})
	require.NoError(t, err)
	st, _, err := persistence.Open(t.TempDir(), m, persistence.Options{Fsync: persistence.FsyncAlways, SnapshotInterval: -1, FS: fsys})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return startServer(t, Config{Store: m, Durability: st})
}

// sampleInt returns the integer sample named exactly name in text, or -1.
func sampleInt(text, name string) int64 {
	n, err := strconv.ParseInt(metricValue(text, name), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// TestFsyncMetrics checks that each write under appendfsync always adds a
// log fsync to /metrics' histogram and to INFO persistence, and a SAVE a
// snapshot fsync.
func TestFsyncMetrics(t *testing.T) {
	s, addr := startDurableFS(t, vfs.OS)
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	const count = `rlstore_persistence_fsync_duration_seconds_count{file="log"}`
	before := sampleInt(scrape(s), count)
	require.GreaterOrEqual(t, before, int64(0), scrape(s))
	for range 3 {
		require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 10, 60).Err())
	}
	m := scrape(s)
	after := sampleInt(m, count)
	assert.GreaterOrEqual(t, after-before, int64(3), "one fsync per write at least")
	assert.Equal(t, after, sampleInt(m, `rlstore_persistence_fsync_duration_seconds_bucket{file="log",le="+Inf"}`))
	assert.NotEmpty(t, metricValue(m, `rlstore_persistence_fsync_duration_seconds_bucket{file="log",le="0.001"}`))
	sum, err := strconv.ParseFloat(metricValue(m, `rlstore_persistence_fsync_duration_seconds_sum{file="log"}`), 64)
	require.NoError(t, err)
	assert.Positive(t, sum)
	assert.Equal(t, int64(0), sampleInt(m, `rlstore_persistence_fsync_errors_total{file="log"}`))
	assert.Equal(t, int64(0), sampleInt(m, `rlstore_persistence_fsync_duration_seconds_count{file="snapshot"}`))

	f := infoFields(c.Info(ctx, "persistence").Val())
	n, err := strconv.ParseInt(f["rl_aof_fsyncs"], 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, after)
	_, err = strconv.ParseInt(f["rl_aof_fsync_usec"], 10, 64)
	assert.NoError(t, err)

	require.Equal(t, "OK", c.Save(ctx).Val())
	assert.Equal(t, int64(1), sampleInt(scrape(s), `rlstore_persistence_fsync_duration_seconds_count{file="snapshot"}`))
	assert.Equal(t, "1", infoFields(c.Info(ctx, "persistence").Val())["rl_rdb_fsyncs"])
}

// TestFsyncMetricsCountFailures fails the log's fsync with ErrorFS: the
// write is refused, and the failed fsync is in the histogram and the
// errors counter.
func TestFsyncMetricsCountFailures(t *testing.T) {
	efs := vfs.NewErrorFS(vfs.OS)
	s, addr := startDurableFS(t, efs)
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 10, 60).Err())
	const count = `rlstore_persistence_fsync_duration_seconds_count{file="log"}`
	before := sampleInt(scrape(s), count)

	efs.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".rla") {
			return syscall.EIO
		}
		return nil
	})
	require.Error(t, c.Do(ctx, "RL.SLIDE", "k", 10, 60).Err())
	m := scrape(s)
	assert.Equal(t, before+1, sampleInt(m, count), m)
	assert.Equal(t, int64(1), sampleInt(m, `rlstore_persistence_fsync_errors_total{file="log"}`))
	assert.Equal(t, "1", infoFields(c.Info(ctx, "persistence").Val())["rl_aof_fsync_errors"])
	efs.Inject(nil)
}
