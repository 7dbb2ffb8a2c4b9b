package persistence

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotOf writes m's snapshot at now to a temp dir and returns its path.
func snapshotOf(t testing.TB, m *shard.Map, now int64) (string, snapInfo) {
	t.Helper()
	path := filepath.Join(t.TempDir(), snapName(7))
	info, err := writeSnapshot(vfs.OS, path, m.Shards(), m.ExportShard, 7, now, nil)
	require.NoError(t, err)
	return path, info
}

func TestSnapshotRoundTrip(t *testing.T) {
	now := t0.UnixNano()
	m := newMap(t, 8)
	traffic(t, m.Decide, rand.New(rand.NewPCG(1, 2)), 3000, 20000, now)
	path, info := snapshotOf(t, m, now)
	want := liveAt(m, now)
	require.Less(t, len(want), int(m.Len()), "some keys have expired but are not swept yet")
	assert.Equal(t, int64(len(want)), info.entries)
	assert.Equal(t, uint64(7), info.gen)

	m2 := newMap(t, 32)
	got, err := loadSnapshotFile(vfs.OS, path, m2, now)
	require.NoError(t, err)
	assert.Equal(t, want, exportAll(m2))
	assert.Equal(t, info, got)
	assert.NoFileExists(t, path+tmpSuffix)
}

func TestSnapshotEmpty(t *testing.T) {
	path, info := snapshotOf(t, newMap(t, 4), t0.UnixNano())
	assert.Zero(t, info.entries)
	m := newMap(t, 4)
	_, err := loadSnapshotFile(vfs.OS, path, m, t0.UnixNano())
	require.NoError(t, err)
	assert.Zero(t, m.Len())
}

// TestSnapshotDropsExpired: state that expired while the server was down is not loaded.
func TestSnapshotDropsExpired(t *testing.T) {
	now := t0.UnixNano()
	m := newMap(t, 8)
	traffic(t, m.Decide, rand.New(rand.NewPCG(3, 4)), 600, 3000, now)
	path, _ := snapshotOf(t, m, now)

	later := now + int64(2*time.Minute)
	want := liveAt(m, later)
	require.NotEmpty(t, want)
	require.Less(t, len(want), len(liveAt(m, now)), "some state must expire")

	m2 := newMap(t, 8)
	_, err := loadSnapshotFile(vfs.OS, path, m2, later)
	require.NoError(t, err)
	assert.Equal(t, want, exportAll(m2))
}

// TestSnapshotDamage: any flipped byte, and any truncation, is corruption
// naming the file and the offset.
func TestSnapshotDamage(t *testing.T) {
	now := t0.UnixNano()
	m := newMap(t, 2)
	traffic(t, m.Decide, rand.New(rand.NewPCG(5, 6)), 30, 100, now)
	path, _ := snapshotOf(t, m, now)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	name := filepath.Base(path)

	check := func(what string, b []byte) {
		t.Helper()
		_, err := loadSnapshot(bytes.NewReader(b), int64(len(b)), name, newMap(t, 2), now)
		var ce *CorruptError
		require.Truef(t, errors.As(err, &ce), "%s: err = %v, want a *CorruptError", what, err)
		assert.Equal(t, name, ce.File)
		assert.True(t, ce.Offset >= 0 && ce.Offset <= int64(len(b)), "%s: offset %d out of the file", what, ce.Offset)
		assert.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), name)
	}
	for off := range good {
		b := bytes.Clone(good)
		b[off] ^= 1 << (off % 8)
		check("flip at "+strconv.Itoa(off), b)
	}
	for n := range len(good) {
		check("cut at "+strconv.Itoa(n), good[:n])
	}
	check("appended junk", append(bytes.Clone(good), 1, 2, 3))
}

func TestSnapshotWrongFile(t *testing.T) {
	b := appendHeader(nil, magicLog, 0, 1)
	_, err := loadSnapshot(bytes.NewReader(b), int64(len(b)), "x.rls", newMap(t, 1), 0)
	assert.ErrorContains(t, err, "x.rls is corrupt at byte 0: not a snapshot (bad magic)")

	b, start := beginBlock(nil, kindHeader)
	b = append(b, magicSnapshot...)
	b = append(b, 2, 0, 0) // version 2
	b = endBlock(b, start)
	_, err = loadSnapshot(bytes.NewReader(b), int64(len(b)), "x.rls", newMap(t, 1), 0)
	assert.ErrorContains(t, err, "format version 2, this build reads 1")
}

// writeSizes is a file system whose files record the size of each write.
type writeSizes struct {
	vfs.FS
	sizes *[]int
}

func (w writeSizes) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := w.FS.OpenFile(name, flag, perm)
	return sizedFile{f, w.sizes}, err
}

type sizedFile struct {
	vfs.File
	sizes *[]int
}

func (f sizedFile) Write(b []byte) (int, error) {
	*f.sizes = append(*f.sizes, len(b))
	return f.File.Write(b)
}

// TestSnapshotInPieces: a shard larger than a piece is encoded a piece at a
// time and written in chunks, so the snapshot's buffer never grows past
// snapshotBuffer, and the file loads back whole.
func TestSnapshotInPieces(t *testing.T) {
	now := t0.UnixNano()
	m := newMap(t, 1)
	traffic(t, m.Decide, rand.New(rand.NewPCG(9, 9)), 30*snapshotPiece, 60*snapshotPiece, now)
	var sizes []int
	path := filepath.Join(t.TempDir(), snapName(7))
	info, err := writeSnapshot(writeSizes{vfs.OS, &sizes}, path, m.Shards(), m.ExportShard, 7, now, nil)
	require.NoError(t, err)
	require.Greater(t, info.bytes, int64(4*writeChunk), "several chunks")
	require.Greater(t, len(sizes), 4)
	for _, n := range sizes {
		assert.LessOrEqual(t, n, snapshotBuffer)
	}

	m2 := newMap(t, 4)
	got, err := loadSnapshotFile(vfs.OS, path, m2, now)
	require.NoError(t, err)
	assert.Equal(t, liveAt(m, now), exportAll(m2))
	assert.Equal(t, info, got)
}
