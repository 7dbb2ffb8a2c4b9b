package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throwaway is a decision command that exists only in this test, added as
// docs/internals.md says a new algorithm's command is: one table entry.
// (It runs the sliding window's algorithm; a new kind would bring its own.)
func throwaway(s *Server) []core.Command {
	cm := s.dec.NativeCommand(window.KindSlide)
	cm.Name = "rl.throwaway"
	return []core.Command{cm}
}

// startThrowaway is startServer with the throwaway command in the table.
func startThrowaway(t *testing.T, cfg Config) string {
	s := newTestServer(t, cfg)
	s.registerSpecified(throwaway(s))
	return serveTest(t, s)
}

// TestOneEntryDecision proves that a decision command added with one table
// entry gets every guarantee the server gives a decision, none of which may
// be keyed by a command's name: its commit's failure takes its charge back
// under appendfsync always, and it is answered as a peek while the log is
// broken; its key is prefetched in a pipeline, also when another node
// forwarded it; it is routed to its key's owner in a cluster; a client
// caching the key hears that it changed; and an ACL's key patterns hold.
func TestOneEntryDecision(t *testing.T) {
	t.Run("durable", testOneEntryDurable)
	t.Run("prefetch", testOneEntryPrefetch)
	t.Run("tracking", testOneEntryTracking)
	t.Run("acl", testOneEntryACL)
	t.Run("cluster", testOneEntryCluster)
}

// Under appendfsync always, a charge whose commit failed is answered
// -MISCONF and taken back; while the log stays broken the command is
// decided as a peek: a denial and a PEEK are answered, an admission is not.
func testOneEntryDurable(t *testing.T) {
	m, err := shard.New(shard.Config{Shards: 16})
	require.NoError(t, err)
	fsys := vfs.NewErrorFS(vfs.OS)
	st, _, err := persistence.Open(t.TempDir(), m, persistence.Options{Fsync: persistence.FsyncAlways, FS: fsys,
		FlushInterval: 5 * time.Millisecond, RetryInterval: 20 * time.Millisecond, SnapshotInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	addr := startThrowaway(t, Config{Store: m, Durability: st})
	ctx := ctxT(t)
	c := newClient(t, addr, 3)
	require.NoError(t, c.Do(ctx, "RL.THROWAWAY", "a", 5, 60).Err())
	require.NoError(t, c.Do(ctx, "RL.THROWAWAY", "full", 1, 60).Err())

	fsys.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync {
			return syscall.EIO
		}
		return nil
	})
	misconfEIO := "MISCONF Errors writing to the AOF file: Input/output error"
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "RL.THROWAWAY", "a", 5, 60)
		p.Do(ctx, "RL.THROWAWAY", "b", 5, 60)
		return nil
	})
	require.Error(t, err)
	require.Len(t, cmds, 2)
	assert.EqualError(t, cmds[0].Err(), misconfEIO)
	assert.EqualError(t, cmds[1].Err(), misconfEIO)
	require.Error(t, st.Err(), "the log stays broken")
	_, kept := m.Get([]byte("b"), time.Now().UnixNano())
	assert.False(t, kept, "the refused request's new key was taken back")

	d, err := c.Do(ctx, "RL.THROWAWAY", "a", 5, 60, "PEEK").Int64Slice()
	require.NoError(t, err, "a peek is answered while the log is broken")
	assert.Equal(t, []int64{1, 5, 3}, d[:3], "the refused charge was taken back: a peek after one charge")
	d, err = c.Do(ctx, "RL.THROWAWAY", "full", 1, 60).Int64Slice()
	require.NoError(t, err, "a denial changes nothing, so it is answered")
	assert.Equal(t, int64(0), d[0])
	require.EqualError(t, c.Do(ctx, "RL.THROWAWAY", "a", 5, 60).Err(), misconfEIO, "an admission is refused")
}

// A pipeline's keys are prefetched, also those of requests another node
// forwarded (RL.HOP).
func testOneEntryPrefetch(t *testing.T) {
	s := newTestServer(t, Config{})
	s.registerSpecified(throwaway(s))
	rc := resp.NewConn(&resp.Guard{}, DefaultMaxRequestBytes, 0, nil)
	for _, r := range []string{respCmd("RL.THROWAWAY", "user:1", "100", "60"), respCmd("RL.HOP", "1", "2", "rl.throwaway", "user:2", "100", "60")} {
		rc.Feed([]byte(r))
	}
	rc.ParseAhead(decide.PrefetchMax)
	require.Equal(t, 2, rc.Ahead())
	var last [2]*core.Command
	for i, want := range []struct {
		key string
		arg int
	}{{"user:1", 1}, {"user:2", 4}} {
		key, arg := s.dec.AheadKey(rc, i, &last)
		assert.Equal(t, want.key, string(key), "request %d", i)
		assert.Equal(t, want.arg, arg, "request %d", i)
	}
}

// A client caching a key's reads is told when the command changes it.
func testOneEntryTracking(t *testing.T) {
	addr := startThrowaway(t, Config{})
	reader, writer := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, reader)
	require.Equal(t, "OK", reader.call(t, "CLIENT", "TRACKING", "ON"))
	require.Equal(t, "nil", reader.call(t, "RL.INFO", "k"))
	require.Contains(t, writer.call(t, "RL.THROWAWAY", "k", "10", "60"), "[1 10 9 0 ")
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))
}

// An ACL user's key patterns hold for the command's key.
func testOneEntryACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user default off\nuser limiter on >pw ~api:* +@all\n"), 0o600))
	addr := startThrowaway(t, Config{ACLFile: path})
	ctx := ctxT(t)
	c := redis.NewClient(&redis.Options{Addr: addr, Username: "limiter", Password: "pw", Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Do(ctx, "RL.THROWAWAY", "api:x", 5, 10).Err())
	assert.EqualError(t, c.Do(ctx, "RL.THROWAWAY", "other:x", 5, 10).Err(), auth.ErrNoPermKey)
}

// In a cluster the command runs at its key's owner, wherever it is sent.
func testOneEntryCluster(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{extra: throwaway})
	ctx := ctxT(t)
	key := ""
	for i := 0; key == ""; i++ {
		if k := "route:" + strings.Repeat("x", i); ownerOf(nodes, k) == nodes[1] {
			key = k
		}
	}
	c := newClient(t, nodes[0].addr, 2)
	var d []int64
	require.Eventually(t, func() bool { // on a loaded host a forward may time out: CLUSTERDOWN, and the client retries
		var err error
		d, err = c.Do(ctx, "RL.THROWAWAY", key, 5, 60).Int64Slice()
		return err == nil
	}, deadline, 10*time.Millisecond)
	assert.Equal(t, []int64{1, 5}, d[:2])
	now := time.Now().UnixNano()
	_, here := nodes[0].srv.cfg.Store.Get([]byte(key), now)
	_, there := nodes[1].srv.cfg.Store.Get([]byte(key), now)
	assert.False(t, here, "the node that was asked holds no state")
	assert.True(t, there, "the owner decided")
}
