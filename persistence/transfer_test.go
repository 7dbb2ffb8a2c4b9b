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
