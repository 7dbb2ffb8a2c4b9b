package persistence

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/require"
)

// benchMap returns a Map of n keys like "user:123456", half Slide (1 h window,
// one counter) and half Token.
func benchMap(b *testing.B, n int) *shard.Map {
	b.Helper()
	m := newMap(b, shard.DefaultShards)
	now := t0.UnixNano()
	for i := range n {
		p := slideP
		if i%2 == 1 {
			p = tokenP
		}
		_, err := m.Decide(fmt.Appendf(nil, "user:%d", i), p, now, 1, false)
		require.NoError(b, err)
	}
	return m
}

var benchSizes = []int{100_000, 1_000_000}

// BenchmarkSnapshotWrite writes a whole snapshot (temp file, fsync, rename).
func BenchmarkSnapshotWrite(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			m := benchMap(b, n)
			path := filepath.Join(b.TempDir(), snapName(1))
			b.ReportAllocs()
			var info snapInfo
			for b.Loop() {
				var err error
				info, err = writeSnapshot(vfs.OS, path, m.Shards(), m.ExportShard, 1, t0.UnixNano(), nil)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(info.bytes)/float64(n), "disk-B/key")
			b.ReportMetric(float64(m.Stats().Bytes)/float64(n), "mem-B/key")
		})
	}
}

// BenchmarkOpen starts a Store from a snapshot of n keys: the restart time.
func BenchmarkOpen(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			m := benchMap(b, n)
			_, err := writeSnapshot(vfs.OS, filepath.Join(dir, snapName(1)), m.Shards(), m.ExportShard, 1, t0.UnixNano(), nil)
			require.NoError(b, err)
			c := newClock()
			b.ReportAllocs()
			for b.Loop() {
				m := newMap(b, shard.DefaultShards)
				st, rec, err := Open(dir, m, c.opts(FsyncEverysec))
				require.NoError(b, err)
				require.Equal(b, int64(n), rec.Keys)
				require.NoError(b, st.Close())
			}
		})
	}
}

// BenchmarkLogAppend is the log's cost per changed key: drain, encode and
// write (no fsync), in flushes of 4096 changed keys.
func BenchmarkLogAppend(b *testing.B) {
	const batch = 4096
	c := newClock()
	st, _, _ := openStore(b, b.TempDir(), c.opts(FsyncNo))
	defer st.Close()
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		b.StopTimer()
		for j := range min(batch, b.N-i) {
			_, err := st.m.Decide(keys[(i+j)%len(keys)], slideP, c.nano(), 1, false)
			require.NoError(b, err)
		}
		b.StartTimer()
		require.NoError(b, st.log.flush(false))
	}
	b.StopTimer()
	b.ReportMetric(float64(st.log.bytes.Load())/float64(max(st.log.logged.Load(), 1)), "log-B/key")
}

// BenchmarkCommitAlways is FsyncAlways: many connections each making a
// decision and waiting for it to be durable, sharing fsyncs.
func BenchmarkCommitAlways(b *testing.B) {
	c := newClock()
	st, _, _ := openStore(b, b.TempDir(), c.opts(FsyncAlways))
	defer st.Close()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Appendf(nil, "conn:%p", pb)
		for pb.Next() {
			if _, err := st.m.Decide(key, slideP, c.nano(), 1, false); err != nil {
				b.Error(err)
			}
			if err := st.Commit(); err != nil {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/float64(max(st.log.group.started, 1)), "commits/fsync")
}
