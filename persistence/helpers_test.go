package persistence

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/require"
)

// t0 is the fake clock's origin.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

var (
	slideP = window.Params{Kind: window.KindSlide, Limit: 1000, Period: time.Hour}
	shortP = window.Params{Kind: window.KindSlide, Limit: 1000, Period: 10 * time.Second}
	tokenP = window.Params{Kind: window.KindToken, Limit: 100, Rate: 10, Period: time.Minute}
)

// clock is a fake clock tests move by hand.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(t0.UnixNano())
	return c
}

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) nano() int64         { return c.ns.Load() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func (c *clock) opts(f FsyncMode) Options {
	return Options{Fsync: f, Clock: c.now, FlushInterval: time.Hour, SnapshotInterval: -1, SnapshotLogBytes: -1}
}

func newMap(t testing.TB, shards int) *shard.Map {
	t.Helper()
	m, err := shard.New(shard.Config{Shards: shards})
	require.NoError(t, err)
	return m
}

// exportAll returns every entry of m, sorted by key.
func exportAll(m *shard.Map) []shard.Entry {
	var all []shard.Entry
	for i := range m.Shards() {
		all = m.ExportShard(i, all)
	}
	slices.SortFunc(all, func(a, b shard.Entry) int { return bytes.Compare(a.Key, b.Key) })
	return all
}

// decider is Map.Decide.
type decider func(key []byte, p window.Params, now, cost int64, peek bool) (window.Decision, error)

// traffic makes n decisions on up to keys keys at now, of every kind, some
// Slide keys with counter blocks.
func traffic(t testing.TB, decide decider, r *rand.Rand, keys, n int, now int64) {
	t.Helper()
	for range n {
		k := r.IntN(keys)
		p := []window.Params{slideP, shortP, tokenP}[k%3]
		at := now - int64(r.IntN(40))*int64(time.Second) // spread Slide counters over many seconds
		if p == tokenP {
			at = now
		}
		_, err := decide(fmt.Appendf(nil, "key:%d", k), p, at, 1, false)
		require.NoError(t, err)
	}
}

// openStore opens dir into a fresh Map and fails the test on error.
func openStore(t testing.TB, dir string, opts Options) (*Store, *shard.Map, Recovery) {
	t.Helper()
	m := newMap(t, 16)
	st, rec, err := Open(dir, m, opts)
	require.NoError(t, err)
	return st, m, rec
}

// files returns the names in dir matching pattern, sorted.
func files(t testing.TB, dir, pattern string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	slices.Sort(names)
	return names
}

// flipByte xors one byte of the file at path.
func flipByte(t testing.TB, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[off] ^= 0x40
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// copyDir copies the regular files of src into a new temp dir, except LOCK files.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	names, err := listDir(vfs.OS, src)
	require.NoError(t, err)
	for _, n := range names {
		if n == lockName || n == policiesLockName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, n), b, 0o600))
	}
	return dst
}

// liveAt returns the entries of m not expired at now, sorted by key.
func liveAt(m *shard.Map, now int64) []shard.Entry {
	var live []shard.Entry
	for _, e := range exportAll(m) {
		if e.Expiry() > now {
			live = append(live, e)
		}
	}
	return live
}
