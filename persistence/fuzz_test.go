package persistence

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var writeSeeds = flag.Bool("write-fuzz-seeds", false, "rewrite testdata/fuzz seed corpora from the generators")

// written maps each key to every state a file wrote for it.
type written map[string][]shard.Entry

func (w written) add(es []shard.Entry) {
	for _, e := range es {
		e.Key, e.Counters = bytes.Clone(e.Key), slices.Clone(e.Counters)
		w[string(e.Key)] = append(w[string(e.Key)], e)
	}
}

// check fails unless every entry of m is one that was written.
func (w written) check(t *testing.T, m *shard.Map) {
	t.Helper()
	for _, e := range exportAll(m) {
		ok := slices.ContainsFunc(w[string(e.Key)], func(x shard.Entry) bool {
			return x.Params == e.Params && x.State == e.State && slices.Equal(x.Counters, e.Counters)
		})
		require.Truef(t, ok, "loaded %q = %+v, which was never written", e.Key, e)
	}
}

// fuzzLog returns a log segment made of several drains of a Map, with
// tombstones and a FLUSHALL, and every state it wrote.
func fuzzLog(t testing.TB) ([]byte, written) {
	now := t0.UnixNano()
	m := newMap(t, 4)
	m.TrackChanges()
	r := rand.New(rand.NewPCG(42, 42))
	w := written{}
	buf := appendHeader(nil, magicLog, now, 3)
	var es []shard.Entry
	for round := range 6 {
		traffic(t, m.Decide, r, 24, 40, now)
		m.Delete(fmt.Appendf(nil, "key:%d", r.IntN(24)))
		if round == 3 {
			b, start := beginBlock(buf, kindFlush)
			buf = endBlock(b, start)
		}
		for i := range m.Shards() {
			es = m.DrainDirty(i, es[:0])
			w.add(es)
			buf = appendEntries(buf, es, now)
		}
	}
	return buf, w
}

// fuzzSnapshot returns a snapshot and every state it wrote.
func fuzzSnapshot(t testing.TB) ([]byte, written) {
	now := t0.UnixNano()
	m := newMap(t, 4)
	traffic(t, m.Decide, rand.New(rand.NewPCG(7, 7)), 40, 200, now)
	path := filepath.Join(t.TempDir(), "s")
	_, err := writeSnapshot(vfs.OS, path, m.Shards(), m.ExportShard, 1, now, nil)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	w := written{}
	w.add(exportAll(m))
	return b, w
}

// FuzzLogReplay: replaying arbitrary bytes never panics and never loads a
// state the log did not hold; a torn tail, once cut off, replays cleanly to
// the same state.
func FuzzLogReplay(f *testing.F) {
	good, w := fuzzLog(f)
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newMap(t, 4)
		valid, _, warn, err := replayLog(bytes.NewReader(data), int64(len(data)), "log", m, t0.UnixNano())
		w.check(t, m)
		var ce *CorruptError
		if err != nil {
			require.Truef(t, errors.As(err, &ce), "replay error %v is not a *CorruptError", err)
			return
		}
		require.LessOrEqual(t, valid, int64(len(data)))
		if warn == nil {
			require.Equal(t, int64(len(data)), valid)
			return
		}
		m2 := newMap(t, 4)
		valid2, _, warn2, err := replayLog(bytes.NewReader(data[:valid]), valid, "log", m2, t0.UnixNano())
		require.NoError(t, err)
		require.Nil(t, warn2)
		require.Equal(t, valid, valid2)
		require.Equal(t, exportAll(m), exportAll(m2))
	})
}

// FuzzSnapshotLoad: loading arbitrary bytes never panics and never loads a
// state the snapshot did not hold; anything but a whole snapshot is an error.
func FuzzSnapshotLoad(f *testing.F) {
	good, w := fuzzSnapshot(f)
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newMap(t, 4)
		_, err := loadSnapshot(bytes.NewReader(data), int64(len(data)), "snap", m, t0.UnixNano())
		w.check(t, m)
		if err != nil {
			var ce *CorruptError
			require.Truef(t, errors.As(err, &ce), "load error %v is not a *CorruptError", err)
		}
	})
}

// TestLogReplayDamage flips every byte of a log in turn: each is either
// corruption, or a torn last block, and never loads what was not written.
func TestLogReplayDamage(t *testing.T) {
	good, w := fuzzLog(t)
	m := newMap(t, 4)
	_, n, warn, err := replayLog(bytes.NewReader(good), int64(len(good)), "log", m, t0.UnixNano())
	require.NoError(t, err)
	require.Nil(t, warn)
	require.Positive(t, n)
	w.check(t, m)
	var corrupt, torn int
	for off := range good {
		b := bytes.Clone(good)
		b[off] ^= 1 << (off % 8)
		m := newMap(t, 4)
		_, _, warn, err := replayLog(bytes.NewReader(b), int64(len(b)), "log", m, t0.UnixNano())
		w.check(t, m)
		switch {
		case err != nil:
			corrupt++
		case warn != nil:
			torn++
		default:
			t.Fatalf("flip at %d went unnoticed", off)
		}
	}
	t.Logf("%d flips: %d corrupt, %d torn (in the last block)", len(good), corrupt, torn)
}

// seedFiles are the committed seed corpora, made by the generators above.
func seedFiles(t *testing.T) map[string][][]byte {
	lg, _ := fuzzLog(t)
	sn, _ := fuzzSnapshot(t)
	half := func(b []byte) []byte { return b[:len(b)/2] }
	flip := func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/3] ^= 4; return b }
	hdr := appendHeader(nil, magicLog, t0.UnixNano(), 1)
	return map[string][][]byte{
		"FuzzLogReplay":    {lg, half(lg), flip(lg), hdr, {}},
		"FuzzSnapshotLoad": {sn, half(sn), flip(sn), appendHeader(nil, magicSnapshot, 0, 1), {}},
	}
}

// TestFuzzSeeds checks the seed corpora in testdata/fuzz match the generators
// (run with -write-fuzz-seeds to rewrite them after a format change).
func TestFuzzSeeds(t *testing.T) {
	for name, seeds := range seedFiles(t) {
		dir := filepath.Join("testdata", "fuzz", name)
		for i, seed := range seeds {
			path := filepath.Join(dir, fmt.Sprintf("seed%d", i))
			content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(seed)) + ")\n"
			if *writeSeeds {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -run TestFuzzSeeds -write-fuzz-seeds")
			assert.Equalf(t, content, string(got), "%s is stale: run go test -run TestFuzzSeeds -write-fuzz-seeds", path)
		}
	}
}
