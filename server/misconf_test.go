package server

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const misconfNoSpace = "MISCONF Errors writing to the AOF file: No space left on device"

// startFaulty runs a server over a persistence.Store whose file system the
// test can make fail, writing its log every few milliseconds.
func startFaulty(t *testing.T, fsync persistence.FsyncMode) (*vfs.ErrorFS, *persistence.Store, *shard.Map, string) {
	t.Helper()
	m, err := shard.New(shard.Config{Shards: 16})
	require.NoError(t, err)
	fsys := vfs.NewErrorFS(vfs.OS)
	st, _, err := persistence.Open(t.TempDir(), m, persistence.Options{Fsync: fsync, FS: fsys,
		FlushInterval: 5 * time.Millisecond, RetryInterval: 20 * time.Millisecond, SnapshotInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, addr := startServer(t, Config{Store: m, Durability: st})
	return fsys, st, m, addr
}

// fullDisk fails every write with ENOSPC.
func fullDisk(op vfs.Op, path string) error {
	if op == vfs.OpWrite {
		return syscall.ENOSPC
	}
	return nil
}

// TestMisconfWhileLogFails fills the disk under everysec: changes are
// refused with Redis's -MISCONF, while reads, PEEKs and denials go on, and
// the server takes changes again by itself once the disk has room.
func TestMisconfWhileLogFails(t *testing.T) {
	fsys, st, _, addr := startFaulty(t, persistence.FsyncEverysec)
	ctx := ctxT(t)
	c := newClient(t, addr, 2)
	empty := st.Stats().LogBytes
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "full", 1, 60).Err())
	require.Eventually(t, func() bool { return st.Stats().LogBytes > empty }, deadline, time.Millisecond,
		"full's change is written before the disk fills, or its write would fail first")

	fsys.Inject(fullDisk)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 5, 60).Err()) // a change for the log to fail on
	require.Eventually(t, func() bool { return st.Err() != nil }, deadline, time.Millisecond)

	_, err := c.Do(ctx, "RL.SLIDE", "k", 5, 60).Result()
	require.EqualError(t, err, misconfNoSpace)
	for _, cmd := range [][]any{{"DEL", "k"}, {"FLUSHALL"}, {"CL.THROTTLE", "t", 5, 1, 60}, {"RL.POLICY", "SET", "p", "SLIDE", 1, 60}} {
		assert.EqualError(t, c.Do(ctx, cmd...).Err(), misconfNoSpace, "%v", cmd)
	}
	d, err := c.Do(ctx, "RL.SLIDE", "full", 1, 60).Int64Slice()
	require.NoError(t, err, "a denial changes nothing")
	assert.Equal(t, int64(0), d[0])
	d, err = c.Do(ctx, "RL.SLIDE", "k", 5, 60, "PEEK").Int64Slice()
	require.NoError(t, err, "a peek changes nothing")
	assert.Equal(t, []int64{1, 5, 3}, d[:3])
	d, err = c.Do(ctx, "CL.THROTTLE", "t", 5, 1, 60, 0).Int64Slice()
	require.NoError(t, err, "CL.THROTTLE's peek")
	assert.Equal(t, int64(0), d[0])
	n, err := c.Exists(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	info := infoFields(c.Info(ctx, "persistence").Val())
	assert.Equal(t, "err", info["aof_last_write_status"])
	assert.Equal(t, "1", info["rl_misconf"])
	assert.NotEqual(t, "0", info["rl_misconf_refused"])

	fsys.Inject(nil)
	require.Eventually(t, func() bool { return st.Err() == nil }, deadline, time.Millisecond)
	d, err = c.Do(ctx, "RL.SLIDE", "k", 5, 60).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 5, 3}, d[:3])
}

// TestMisconfUnderAlways fails the fsync under appendfsync always: each
// reply of a pipeline that changed state becomes -MISCONF, other replies
// of the batch are kept, and the connection stays open.
func TestMisconfUnderAlways(t *testing.T) {
	fsys, st, _, addr := startFaulty(t, persistence.FsyncAlways)
	ctx := ctxT(t)
	c := newClient(t, addr, 3)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "a", 5, 60).Err())

	fsys.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync {
			return syscall.EIO
		}
		return nil
	})
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "RL.SLIDE", "a", 5, 60)
		p.Ping(ctx)
		p.Do(ctx, "RL.SLIDE", "b", 5, 60)
		p.Do(ctx, "RL.SLIDE", "a", 5, 60, "PEEK")
		return nil
	})
	require.Error(t, err)
	require.Len(t, cmds, 4)
	misconfEIO := "MISCONF Errors writing to the AOF file: Input/output error"
	assert.EqualError(t, cmds[0].Err(), misconfEIO)
	assert.Equal(t, "PONG", cmds[1].(*redis.StatusCmd).Val())
	assert.EqualError(t, cmds[2].Err(), misconfEIO)
	assert.NoError(t, cmds[3].Err(), "a peek changed nothing, so its reply stands though its batch's commit failed")

	d, err := c.Do(ctx, "RL.SLIDE", "a", 5, 60, "PEEK").Int64Slice()
	require.NoError(t, err, "a peek alone is answered while the log fails")
	assert.Equal(t, []int64{1, 5, 3}, d[:3], "the refused charge was taken back")
	assert.Zero(t, c.Exists(ctx, "b").Val(), "the refused request's new key was taken back")
	require.EqualError(t, c.Do(ctx, "RL.SLIDE", "a", 5, 60).Err(), misconfEIO)
	assert.True(t, strings.HasPrefix(st.Err().Error(), "persistence"))

	fsys.Inject(nil)
	require.Eventually(t, func() bool { return st.Err() == nil }, deadline, time.Millisecond)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "a", 5, 60).Err())
}

// TestRefusedChargesAreTakenBack charges one key from many clients while
// every log fsync fails under appendfsync always: every request is refused,
// and none leaves a charge, whichever client learns of its failure first.
func TestRefusedChargesAreTakenBack(t *testing.T) {
	fsys, _, m, addr := startFaulty(t, persistence.FsyncAlways)
	ctx := ctxT(t)
	fsys.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".rla") {
			return syscall.EIO
		}
		return nil
	})
	const clients, each = 8, 40
	errs := make(chan error, clients)
	for range clients {
		go func() {
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			defer c.Close()
			for range each {
				if err := c.Do(ctx, "RL.SLIDE", "hot", 100000, 60).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
					errs <- fmt.Errorf("a charge was not refused: %v", err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		require.NoError(t, <-errs)
	}
	_, ok := m.Get([]byte("hot"), time.Now().UnixNano())
	assert.False(t, ok, "refused charges were kept")
}

// TestChargeMadeWhileAnotherIsTakenBack replays a race that acknowledged a
// charge the log never held. Client A looks up the key's state before its
// charge while client B's charge is on it; B's commit fails and its charge is
// taken back; A then charges the emptied key, to the very state B's charge
// had made. A's lookups before and after its charge saw the same state, so
// its charge went unnoticed: no commit, and a success reply while the log
// was failing. A's charge must be refused too, and neither may stay.
func TestChargeMadeWhileAnotherIsTakenBack(t *testing.T) {
	clk := newFakeClock(time.Unix(1700000000, 0)) // both charges make the same state
	m, err := shard.New(shard.Config{Shards: 16})
	require.NoError(t, err)
	fsys := vfs.NewErrorFS(vfs.OS)
	st, _, err := persistence.Open(t.TempDir(), m, persistence.Options{Fsync: persistence.FsyncAlways, FS: fsys,
		FlushInterval: 5 * time.Millisecond, RetryInterval: 20 * time.Millisecond, SnapshotInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s := newTestServer(t, Config{Store: m, Durability: st, Clock: clk.Now})

	syncing, aLooked, bReplied, busy := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var syncOnce, busyOnce sync.Once
	fsys.Inject(func(op vfs.Op, path string) error {
		if op != vfs.OpSync || !strings.HasSuffix(path, ".rla") {
			return nil
		}
		syncOnce.Do(func() { close(syncing) }) // B's charge is made, and its commit under way
		<-aLooked
		return syscall.EIO
	})
	var looks atomic.Int32
	s.dur.Hooks.Looked = func() {
		if looks.Add(1) != 2 { // the first is B's
			return
		}
		close(aLooked) // B's commit fails now
		select {
		case <-bReplied: // B's charge was taken back before A's is made
		case <-busy: // or its taking back waits for A's charge to be made and seen
		}
	}
	s.dur.Hooks.KeyBusy = func() { busyOnce.Do(func() { close(busy) }) }
	addr := serveTest(t, s)

	ctx := ctxT(t)
	a, b := newClient(t, addr, 2), newClient(t, addr, 2)
	bErr := make(chan error, 1)
	go func() {
		bErr <- b.Do(ctx, "RL.SLIDE", "hot", 100000, 60).Err()
		close(bReplied)
	}()
	<-syncing
	aReply, aErr := a.Do(ctx, "RL.SLIDE", "hot", 100000, 60).Result()
	require.Error(t, aErr, "A's charge was acknowledged while the log failed: %v", aReply)
	assert.True(t, strings.HasPrefix(aErr.Error(), "MISCONF"), "%v", aErr)
	require.Error(t, <-bErr)
	_, ok := m.Get([]byte("hot"), clk.Now().UnixNano())
	assert.False(t, ok, "a refused charge was kept")
}
