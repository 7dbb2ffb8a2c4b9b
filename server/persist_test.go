package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDurability is a Durability whose snapshot the test decides.
type fakeDurability struct {
	save func() error
	mu   sync.Mutex // guards last
	last time.Time
	bg   sync.Mutex // held by a background snapshot
}

func (f *fakeDurability) Commit() error { return nil }
func (f *fakeDurability) Err() error    { return nil }
func (f *fakeDurability) Flush() error  { return nil }

func (f *fakeDurability) Snapshot() error {
	if err := f.save(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = time.Now()
	return nil
}

func (f *fakeDurability) BackgroundSnapshot() bool {
	if !f.bg.TryLock() {
		return false
	}
	go func() {
		defer f.bg.Unlock()
		_ = f.Snapshot()
	}()
	return true
}

func (f *fakeDurability) Stats() persistence.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return persistence.Stats{LastSave: f.last}
}

// startDurable runs a server over a persistence.Store in dir.
func startDurable(t *testing.T, dir string, fsync persistence.FsyncMode) (*persistence.Store, *shard.Map, string) {
	t.Helper()
	m, err := shard.New(shard.Config{Shards: 16})
	require.NoError(t, err)
	st, _, err := persistence.Open(dir, m, persistence.Options{Fsync: fsync, SnapshotInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, addr := startServer(t, Config{Store: m, Durability: st})
	return st, m, addr
}

// infoFields parses INFO's reply into its fields.
func infoFields(info string) map[string]string {
	f := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	return f
}

func TestPersistenceCommands(t *testing.T) {
	dir := t.TempDir()
	_, _, addr := startDurable(t, dir, persistence.FsyncEverysec)
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	assert.EqualValues(t, 0, c.LastSave(ctx).Val(), "a fresh data dir has no snapshot")
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 10, 60).Err())

	require.Equal(t, "OK", c.Save(ctx).Val())
	assert.InDelta(t, time.Now().Unix(), c.LastSave(ctx).Val(), 5)
	f := infoFields(c.Info(ctx, "persistence").Val())
	assert.Equal(t, "enabled", f["rl_persistence"])
	assert.Equal(t, "1", f["rdb_saves"])
	assert.Equal(t, "ok", f["rdb_last_bgsave_status"])
	assert.Equal(t, "1", f["aof_enabled"])
	assert.Equal(t, "everysec", f["rl_appendfsync"])
	assert.Equal(t, map[string]string{"appendonly": "yes", "appendfsync": "everysec"},
		c.ConfigGet(ctx, "append*").Val(), "CONFIG GET agrees with INFO")
	for _, k := range []string{"rdb_last_save_time", "aof_current_size", "rl_aof_fsync_lag_ms", "rl_aof_last_fsync_ms", "rl_loaded_keys", "rl_load_time_ms", "rl_rdb_last_save_bytes"} {
		_, err := strconv.ParseInt(f[k], 10, 64)
		assert.NoError(t, err, "INFO persistence %s = %q", k, f[k])
	}

	require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
	eventually(t, "the background save", func() bool {
		return infoFields(c.Info(ctx, "persistence").Val())["rdb_saves"] == "2"
	})
}

// TestAlwaysRepliesAfterTheFsync copies the data dir as a crash would leave
// it, right after the replies: under appendfsync always every admitted
// decision is in the copy.
func TestAlwaysRepliesAfterTheFsync(t *testing.T) {
	dir := t.TempDir()
	_, _, addr := startDurable(t, dir, persistence.FsyncAlways)
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	p := c.Pipeline()
	for range 7 {
		p.Do(ctx, "RL.SLIDE", "k", 100, 3600)
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 100, 3600).Err())

	crashed := copyDir(t, dir)
	m, err := shard.New(shard.Config{Shards: 4})
	require.NoError(t, err)
	st, rec, err := persistence.Open(crashed, m, persistence.Options{SnapshotInterval: -1})
	require.NoError(t, err)
	defer st.Close()
	assert.EqualValues(t, 1, rec.Keys)
	got, ok := m.Get([]byte("k"), time.Now().UnixNano())
	require.True(t, ok)
	assert.EqualValues(t, 8, got.Count)
}

func TestFlushAllIsLogged(t *testing.T) {
	dir := t.TempDir()
	st, _, addr := startDurable(t, dir, persistence.FsyncEverysec)
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "a", 10, 60).Err())
	require.NoError(t, c.Save(ctx).Err())
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "b", 10, 60).Err())
	require.NoError(t, c.FlushAll(ctx).Err())
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "c", 10, 60).Err())
	require.NoError(t, st.Close())

	m, err := shard.New(shard.Config{})
	require.NoError(t, err)
	st2, rec, err := persistence.Open(dir, m, persistence.Options{SnapshotInterval: -1})
	require.NoError(t, err)
	defer st2.Close()
	assert.EqualValues(t, 1, rec.Keys, "only the key made after FLUSHALL")
	_, ok := m.Get([]byte("c"), time.Now().UnixNano())
	assert.True(t, ok)
}

// copyDir copies dir's files into a new directory, as a crash leaves them.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, e.Name()), b, 0o600))
	}
	return out
}
