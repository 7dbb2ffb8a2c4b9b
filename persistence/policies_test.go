package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openPolicies(t *testing.T, dir string) (*Policies, []Warning) {
	t.Helper()
	p, warns, err := OpenPolicies(dir)
	require.NoError(t, err)
	return p, warns
}

func TestPoliciesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p, warns := openPolicies(t, dir)
	assert.Empty(t, warns)
	assert.Empty(t, p.List())
	require.NoError(t, p.Put("api", []byte("SLIDE 10 60")))
	require.NoError(t, p.Put("login", []byte("TOKEN 5 1 1 PENALTY 60")))
	require.NoError(t, p.Put("api", []byte("SLIDE 20 60"))) // redefined
	require.NoError(t, p.Put("empty", nil))
	ok, err := p.Delete("login")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = p.Delete("nope")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.ErrorIs(t, p.Put("", []byte("x")), ErrPolicy)
	assert.ErrorIs(t, p.Put("big", make([]byte, MaxPolicyBytes)), ErrPolicy)

	check := func(p *Policies) {
		t.Helper()
		assert.Equal(t, []string{"api", "empty"}, p.List())
		def, ok := p.Get("api")
		assert.True(t, ok)
		assert.Equal(t, "SLIDE 20 60", string(def))
		def, ok = p.Get("empty")
		assert.True(t, ok)
		assert.Empty(t, def)
		_, ok = p.Get("login")
		assert.False(t, ok)
	}
	check(p)
	require.NoError(t, p.Close())
	assert.ErrorIs(t, p.Close(), ErrClosed)
	assert.ErrorIs(t, p.Put("x", nil), ErrClosed)

	p, warns = openPolicies(t, dir)
	defer p.Close()
	assert.Empty(t, warns)
	check(p)
}

// TestPoliciesCompaction: redefining one policy many times keeps the file
// small, and what is loaded afterwards is the last definition.
func TestPoliciesCompaction(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPolicies(t, dir)
	def := bytes.Repeat([]byte("x"), 1000)
	require.NoError(t, p.Put("keep", []byte("kept")))
	for i := range 500 {
		require.NoError(t, p.Put("hot", fmt.Appendf(def[:0:0], "%s%d", def, i)))
	}
	info, err := os.Stat(filepath.Join(dir, policiesName))
	require.NoError(t, err)
	assert.Less(t, info.Size(), int64(2*compactMin), "the file was never rewritten")
	assert.NoFileExists(t, filepath.Join(dir, policiesName+tmpSuffix))
	require.NoError(t, p.Put("after", []byte("compaction"))) // appends to the rewritten file
	require.NoError(t, p.Close())

	p, _ = openPolicies(t, dir)
	defer p.Close()
	assert.Equal(t, []string{"after", "hot", "keep"}, p.List())
	got, _ := p.Get("hot")
	assert.Equal(t, fmt.Sprintf("%s%d", def, 499), string(got))
}

func TestPoliciesTornTail(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPolicies(t, dir)
	require.NoError(t, p.Put("a", []byte("1")))
	require.NoError(t, p.Put("b", []byte("2")))
	require.NoError(t, p.Close())
	path := filepath.Join(dir, policiesName)
	info, err := os.Stat(path)
	require.NoError(t, err)

	for _, cut := range []int64{1, 5, 9, 12} { // into b's record: its checksum, payload, header
		require.NoError(t, os.Truncate(path, info.Size()-cut))
		p, warns := openPolicies(t, dir)
		require.Lenf(t, warns, 1, "cut %d", cut)
		assert.Equal(t, policiesName, warns[0].File)
		assert.Equal(t, []string{"a"}, p.List())
		require.NoError(t, p.Put("b", []byte("2"))) // appends after the cut
		require.NoError(t, p.Close())
		p, warns = openPolicies(t, dir)
		assert.Empty(t, warns)
		assert.Equal(t, []string{"a", "b"}, p.List())
		require.NoError(t, p.Close())
	}
}

func TestPoliciesCorrupt(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPolicies(t, dir)
	for i := range 10 {
		require.NoError(t, p.Put(fmt.Sprintf("p%d", i), []byte("SLIDE 10 60")))
	}
	require.NoError(t, p.Close())
	path := filepath.Join(dir, policiesName)
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	last := int64(len(good)) - int64(len(appendPut(nil, "p9", []byte("SLIDE 10 60"))))
	for off := range last { // every byte before the last record
		b := bytes.Clone(good)
		b[off] ^= 0x10
		require.NoError(t, os.WriteFile(path, b, 0o600))
		_, _, err := OpenPolicies(dir)
		var ce *CorruptError
		require.Truef(t, errors.As(err, &ce), "flip at %d: OpenPolicies = %v, want a *CorruptError", off, err)
		assert.Equal(t, policiesName, ce.File)
		assert.LessOrEqual(t, ce.Offset, off)
		assert.Contains(t, err.Error(), fmt.Sprintf("%s is corrupt at byte %d", policiesName, ce.Offset))
	}
}

func TestPoliciesLocked(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPolicies(t, dir)
	_, _, err := OpenPolicies(dir)
	assert.ErrorIs(t, err, ErrLocked)
	require.NoError(t, p.Close())
}

func TestPoliciesEmptyFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, policiesName), nil, 0o600))
	p, warns := openPolicies(t, dir)
	assert.Empty(t, warns)
	require.NoError(t, p.Put("a", []byte("1")))
	require.NoError(t, p.Close())
	p, _ = openPolicies(t, dir)
	defer p.Close()
	assert.Equal(t, []string{"a"}, p.List())
}

// TestPoliciesRepairDeletedFile deletes the data directory under an open
// policy store: the next Put writes the file again, whole, so a restart
// finds every policy.
func TestPoliciesRepairDeletedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p, _, err := OpenPolicies(dir)
	require.NoError(t, err)
	require.NoError(t, p.Put("a", []byte("def-a")))
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, p.Put("b", []byte("def-b")))
	require.NoError(t, p.Close())

	p2, _, err := OpenPolicies(dir)
	require.NoError(t, err)
	defer p2.Close()
	assert.Equal(t, []string{"a", "b"}, p2.List())
}
