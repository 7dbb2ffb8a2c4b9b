package main

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run rlstore with a --data-dir, stop it in various ways, and
// start it again on the same folder.

const slideLimit = 100

// startDurable starts rlstore on dir and returns it with a client.
func startDurable(t *testing.T, dir string, args ...string) (*proc, *redis.Client) {
	t.Helper()
	p := startProc(t, nil, append([]string{"--port", "0", "--data-dir", dir}, args...)...)
	return p, newClient(t, p.Addr(t))
}

func ctxDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// admit makes n admitted RL.SLIDE decisions on key, limit 100 an hour.
func admit(ctx context.Context, t *testing.T, c *redis.Client, key string, n int) {
	t.Helper()
	for i := range n {
		r, err := c.Do(ctx, "RL.SLIDE", key, slideLimit, 3600).Int64Slice()
		require.NoError(t, err)
		require.EqualValues(t, 1, r[0], "decision %d on %s admitted", i, key)
	}
}

// remaining peeks at the units key has left: a peek's remaining counts the
// peeked request as admitted.
func remaining(ctx context.Context, t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	r, err := c.Do(ctx, "RL.SLIDE", key, slideLimit, 3600, "PEEK").Int64Slice()
	require.NoError(t, err)
	return r[2] + r[0]
}

func info(ctx context.Context, t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	f, err := persistenceInfo(ctx, c)
	require.NoError(t, err)
	return f
}

// persistenceInfo reads INFO persistence into a map.
func persistenceInfo(ctx context.Context, c *redis.Client) (map[string]string, error) {
	return infoSection(ctx, c, "persistence")
}

// infoSection reads one section of INFO into a map.
func infoSection(ctx context.Context, c *redis.Client, section string) (map[string]string, error) {
	s, err := c.Info(ctx, section).Result()
	f := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	return f, err
}

func infoInt(ctx context.Context, t *testing.T, c *redis.Client, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(info(ctx, t, c)[field], 10, 64)
	require.NoError(t, err, "INFO persistence %s", field)
	return n
}

// waitFsyncAfter waits until two log fsyncs have finished after after: the
// second began after the first ended, so it wrote every change made before after.
func waitFsyncAfter(ctx context.Context, t *testing.T, c *redis.Client, after time.Time) {
	t.Helper()
	var mark atomic.Int64 // written by Eventually's condition goroutine
	mark.Store(after.UnixMilli())
	for range 2 {
		require.Eventually(t, func() bool {
			f, err := persistenceInfo(ctx, c)
			at, perr := strconv.ParseInt(f["rl_aof_last_fsync_ms"], 10, 64)
			if err != nil || perr != nil || at <= mark.Load() {
				return false
			}
			mark.Store(at)
			return true
		}, deadline, 20*time.Millisecond, "no log fsync after %d", after.UnixMilli())
	}
}

func kill9(t *testing.T, p *proc) {
	t.Helper()
	p.Signal(t, syscall.SIGKILL)
	p.ExitCode(t)
}

func TestProcessKill9Always(t *testing.T) {
	dir := t.TempDir()
	p, c := startDurable(t, dir, "--appendfsync", "always")
	ctx := ctxDeadline(t)
	admit(ctx, t, c, "k", 37)
	pipe := c.Pipeline()
	for range 5 {
		pipe.Do(ctx, "RL.SLIDE", "k", slideLimit, 3600)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	kill9(t, p) // straight after the last reply

	_, c = startDurable(t, dir, "--appendfsync", "always")
	assert.EqualValues(t, slideLimit-42, remaining(ctx, t, c, "k"), "every acknowledged decision survives kill -9")
}

func TestProcessKill9Everysec(t *testing.T) {
	dir := t.TempDir()
	p, c := startDurable(t, dir) // everysec is the default
	ctx := ctxDeadline(t)
	admit(ctx, t, c, "old", 23)
	waitFsyncAfter(ctx, t, c, time.Now())
	admit(ctx, t, c, "recent", 5) // may be lost: younger than a second
	kill9(t, p)

	_, c = startDurable(t, dir)
	assert.EqualValues(t, slideLimit-23, remaining(ctx, t, c, "old"), "decisions older than the last fsync survive")
	assert.GreaterOrEqual(t, remaining(ctx, t, c, "recent"), int64(slideLimit-5))
}

// TestProcessCleanStopsLoseNothing: SIGTERM, SHUTDOWN and SHUTDOWN NOSAVE,
// under every fsync mode, keep every decision made before them.
func TestProcessCleanStopsLoseNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fsync string
		stop  func(ctx context.Context, t *testing.T, p *proc, c *redis.Client)
	}{
		{"SIGTERM", "everysec", func(_ context.Context, t *testing.T, p *proc, _ *redis.Client) { p.Signal(t, syscall.SIGTERM) }},
		{"SIGTERM", "no", func(_ context.Context, t *testing.T, p *proc, _ *redis.Client) { p.Signal(t, syscall.SIGTERM) }},
		{"SHUTDOWN", "everysec", func(ctx context.Context, _ *testing.T, _ *proc, c *redis.Client) { _ = c.Do(ctx, "SHUTDOWN").Err() }},
		{"SHUTDOWN NOSAVE", "no", func(ctx context.Context, _ *testing.T, _ *proc, c *redis.Client) {
			_ = c.Do(ctx, "SHUTDOWN", "NOSAVE").Err()
		}},
	} {
		t.Run(tt.name+"/"+tt.fsync, func(t *testing.T) {
			dir := t.TempDir()
			p, c := startDurable(t, dir, "--appendfsync", tt.fsync)
			ctx := ctxDeadline(t)
			admit(ctx, t, c, "k", 61)
			require.NoError(t, c.Del(ctx, "gone").Err())
			admit(ctx, t, c, "gone", 1)
			require.NoError(t, c.Del(ctx, "gone").Err())
			tt.stop(ctx, t, p, c)
			require.Equal(t, 0, p.ExitCode(t))

			_, c = startDurable(t, dir, "--appendfsync", tt.fsync)
			assert.EqualValues(t, slideLimit-61, remaining(ctx, t, c, "k"))
			assert.EqualValues(t, 0, c.Exists(ctx, "gone").Val(), "a deleted key stays deleted")
			assert.EqualValues(t, 1, infoInt(ctx, t, c, "rl_loaded_keys"))
		})
	}
}

// TestProcessExpiredStateIsNotLoaded stops the server with a key whose
// window is one second, waits until that has passed, and starts again.
func TestProcessExpiredStateIsNotLoaded(t *testing.T) {
	dir := t.TempDir()
	p, c := startDurable(t, dir)
	ctx := ctxDeadline(t)
	admit(ctx, t, c, "long", 3)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "short", 5, 1).Err())
	ttl, err := c.PTTL(ctx, "short").Result()
	require.NoError(t, err)
	require.Positive(t, ttl)
	expires := time.Now().Add(ttl)
	p.Signal(t, syscall.SIGTERM)
	require.Equal(t, 0, p.ExitCode(t))
	for time.Now().Before(expires.Add(10 * time.Millisecond)) { // the state's own clock, not ordering
		time.Sleep(time.Until(expires) + 10*time.Millisecond)
	}

	_, c = startDurable(t, dir)
	assert.EqualValues(t, 0, c.Exists(ctx, "short").Val(), "expired while down")
	assert.EqualValues(t, slideLimit-3, remaining(ctx, t, c, "long"))
	assert.EqualValues(t, 1, infoInt(ctx, t, c, "rl_loaded_keys"))
}

// files returns dir's files whose names start with prefix, sorted.
func files(t *testing.T, dir, prefix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// crashWithBlocks leaves dir with a log of several blocks, one per
// acknowledged decision under appendfsync always, and no snapshot since.
func crashWithBlocks(t *testing.T, dir string, n int) {
	t.Helper()
	p, c := startDurable(t, dir, "--appendfsync", "always")
	admit(ctxDeadline(t), t, c, "k", n)
	kill9(t, p)
}

func TestProcessTornTailIsTruncated(t *testing.T) {
	dir := t.TempDir()
	crashWithBlocks(t, dir, 5)
	logs := files(t, dir, "log-")
	require.NotEmpty(t, logs)
	last := logs[len(logs)-1]
	st, err := os.Stat(last)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(last, st.Size()-3)) // the last decision's block, cut mid-write

	p, c := startDurable(t, dir)
	ctx := ctxDeadline(t)
	m := p.WaitLog(t, regexp.MustCompile(`level=WARN msg="truncated a torn last record left by a crash" file=(\S+) offset=(\d+)`))
	assert.Equal(t, last, m[1])
	assert.EqualValues(t, slideLimit-4, remaining(ctx, t, c, "k"), "every block before the torn one is loaded")
}

// TestProcessCorruptionRefusesToStart flips a byte inside a block that is
// not the last, in a snapshot and in a log.
func TestProcessCorruptionRefusesToStart(t *testing.T) {
	for _, kind := range []string{"snap-", "log-"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			if kind == "snap-" {
				p, c := startDurable(t, dir)
				ctx := ctxDeadline(t)
				for i := range 50 {
					admit(ctx, t, c, "key:"+strconv.Itoa(i), 1)
				}
				require.NoError(t, c.Save(ctx).Err())
				kill9(t, p)
			} else {
				crashWithBlocks(t, dir, 4)
			}
			fs := files(t, dir, kind)
			require.NotEmpty(t, fs)
			name := fs[len(fs)-1]
			b, err := os.ReadFile(name)
			require.NoError(t, err)
			off := secondBlockPayload(t, b)
			b[off] ^= 0x40
			require.NoError(t, os.WriteFile(name, b, 0o600))

			p := startProc(t, nil, "--port", "0", "--data-dir", dir)
			assert.NotEqual(t, 0, p.ExitCode(t))
			assert.Regexp(t, `refusing to start: `+regexp.QuoteMeta(name)+` is corrupt at byte \d+`, p.Log.String())
		})
	}
}

// secondBlockPayload returns the offset of a byte inside the payload of the
// file's second block (the first after the header), which must not be its last.
func secondBlockPayload(t *testing.T, b []byte) int {
	t.Helper()
	const head, tail = 8, 4
	first := head + int(binary.LittleEndian.Uint32(b)) + tail
	require.Greater(t, len(b), first+head)
	n := int(binary.LittleEndian.Uint32(b[first:]))
	require.Greater(t, len(b), first+head+n+tail, "the block is not the last")
	return first + head + n/2
}

func TestProcessPersistenceCommands(t *testing.T) {
	dir := t.TempDir()
	p, c := startDurable(t, dir)
	ctx := ctxDeadline(t)
	f := info(ctx, t, c)
	assert.Equal(t, "enabled", f["rl_persistence"])
	assert.Equal(t, "everysec", f["rl_appendfsync"])
	assert.Equal(t, "0", f["rdb_last_save_time"])
	admit(ctx, t, c, "k", 2)
	require.Equal(t, "OK", c.Save(ctx).Val())
	assert.InDelta(t, time.Now().Unix(), c.LastSave(ctx).Val(), 5)
	require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
	_ = c.Do(ctx, "SHUTDOWN").Err() // closes without a reply
	require.Equal(t, 0, p.ExitCode(t))

	_, c = startDurable(t, dir)
	f = info(ctx, t, c)
	assert.Equal(t, "1", f["rl_loaded_keys"])
	assert.NotEqual(t, "0", f["rdb_last_save_time"], "LASTSAVE is the loaded snapshot's time")
}

func TestProcessWithoutDataDirSaysSo(t *testing.T) {
	p := startProc(t, nil, "--port", "0")
	c := newClient(t, p.Addr(t))
	assert.Contains(t, p.Log.String(), "persistence is off")
	assert.Equal(t, "disabled", info(ctxDeadline(t), t, c)["rl_persistence"])
}
