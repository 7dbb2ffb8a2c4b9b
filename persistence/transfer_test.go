package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransferMovesOnlyTheChosenKeys: the keys a filter picks, of every
// kind, arrive equal in another Map through AppendEntries and
// ImportEntries; the others stay behind.
func TestTransferMovesOnlyTheChosenKeys(t *testing.T) {
	c := newClock()
	from, to := newMap(t, 4), newMap(t, 8)
	for i, p := range everyKind {
		for n := range 2 + 11*(i%2) {
			for _, prefix := range []string{"move", "stay"} {
				key := fmt.Appendf(nil, "%s:%s:%d", prefix, p.Kind, i)
				_, err := from.Decide(key, p, c.nano()+int64(n)*int64(time.Second), 1, false)
				require.NoError(t, err)
			}
		}
	}
	moving := func(k []byte) bool { return bytes.HasPrefix(k, []byte("move:")) }
	var es []shard.Entry
	for i := range from.Shards() {
		es = from.ExportShardFunc(i, moving, es)
	}
	require.Len(t, es, len(everyKind))
	n, err := ImportEntries(AppendEntries(nil, es, c.nano()), to, c.nano())
	require.NoError(t, err)
	assert.Equal(t, len(everyKind), n)

	var want []shard.Entry
	for _, e := range exportAll(from) {
		if moving(e.Key) {
			want = append(want, e)
		}
	}
	assert.Equal(t, want, exportAll(to))
}

// TestTransferCarriesTombstones: a deleted key travels as a tombstone and
// deletes the key where it lands.
func TestTransferCarriesTombstones(t *testing.T) {
	c := newClock()
	to := newMap(t, 2)
	_, err := to.Decide([]byte("gone"), slideP, c.nano(), 1, false)
	require.NoError(t, err)
	b := AppendEntries(nil, []shard.Entry{{Key: []byte("gone")}}, c.nano())
	var seen []string
	n, err := DecodeEntries(b, func(e *shard.Entry) error {
		seen = append(seen, fmt.Sprintf("%s deleted=%v", e.Key, e.Deleted()))
		return to.Import(*e, c.nano())
	})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"gone deleted=true"}, seen)
	assert.Empty(t, exportAll(to))
}

// TestTransferRefusesDamage: a cut or flipped transfer is corrupt, never
// half-imported silently; an empty one holds no entries.
func TestTransferRefusesDamage(t *testing.T) {
	c := newClock()
	m := newMap(t, 2)
	_, err := m.Decide([]byte("a"), slideP, c.nano(), 1, false)
	require.NoError(t, err)
	b := AppendEntries(nil, exportAll(m), c.nano())

	n, err := DecodeEntries(nil, func(*shard.Entry) error { return nil })
	require.NoError(t, err)
	assert.Zero(t, n)

	_, err = DecodeEntries(b[:len(b)-1], func(*shard.Entry) error { return nil })
	assert.ErrorIs(t, err, ErrCorrupt, "cut short")

	flipped := bytes.Clone(b)
	flipped[len(flipped)-6] ^= 0x40
	_, err = DecodeEntries(flipped, func(*shard.Entry) error { return nil })
	assert.ErrorIs(t, err, ErrCorrupt, "flipped")

	stop := errors.New("stop")
	_, err = DecodeEntries(b, func(*shard.Entry) error { return stop })
	assert.ErrorIs(t, err, stop, "fn's error comes back as is")
}

// TestTransferChunks: AppendEntriesChunks cuts entries into chunks of at
// most about the limit, each decoding on its own, that together hold every
// entry in order; an entry larger than the limit gets a chunk of its own,
// and room the caller reserves at a chunk's start is kept.
func TestTransferChunks(t *testing.T) {
	c := newClock()
	m := newMap(t, 4)
	for i := range 400 {
		key := fmt.Appendf(nil, "chunk:%d:%s", i, bytes.Repeat([]byte("k"), i%50))
		_, err := m.Decide(key, slideP, c.nano(), 1, false)
		require.NoError(t, err)
	}
	es := exportAll(m)
	es = append(es, shard.Entry{Key: bytes.Repeat([]byte("g"), 3000)}) // a tombstone larger than the limit
	const limit, head = 1024, 16
	fresh := func() []byte { return make([]byte, head, 2*limit) }
	var chunks [][]byte
	for len(es) > 0 { // in pieces, as drains come
		n := min(len(es), 37)
		chunks = AppendEntriesChunks(chunks, es[:n], c.nano(), limit, fresh)
		es = es[n:]
	}
	var got []string
	for i, ch := range chunks {
		require.Equal(t, make([]byte, head), ch[:head], "chunk %d keeps its reserved room", i)
		if len(ch) > limit {
			n, err := DecodeEntries(ch[head:], func(*shard.Entry) error { return nil })
			require.NoError(t, err)
			assert.Equal(t, 1, n, "chunk %d (%d bytes) is over the limit only for one large entry", i, len(ch))
		}
		_, err := DecodeEntries(ch[head:], func(e *shard.Entry) error {
			got = append(got, string(e.Key))
			return nil
		})
		require.NoError(t, err, "chunk %d decodes on its own", i)
	}
	var want []string
	for _, e := range append(exportAll(m), shard.Entry{Key: bytes.Repeat([]byte("g"), 3000)}) {
		want = append(want, string(e.Key))
	}
	assert.Equal(t, want, got)
	assert.Greater(t, len(chunks), 10)
}
