package shard

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanCursorSurvivesFloat64 walks a Map of the most shards there can be,
// passing every cursor through a float64 as a JavaScript client does: every
// cursor stays below 2^53, so none is rounded, and every key comes back once.
func TestScanCursorSurvivesFloat64(t *testing.T) {
	m := newMap(t, Config{Shards: MaxShards})
	addKeys(t, m, "k", 3000, slideP(1, time.Hour), t0)
	seen := map[string]int{}
	var keys [][]byte
	calls := 0
	for cursor := uint64(0); ; calls++ {
		require.Less(t, calls, 20000, "Scan never returned cursor 0")
		keys, cursor = m.Scan(keys[:0], cursor, 10)
		for _, k := range keys {
			seen[string(k)]++
		}
		if cursor == 0 {
			break
		}
		require.LessOrEqual(t, cursor, uint64(MaxCursor))
		require.Equal(t, cursor, uint64(float64(cursor)), "cursor %d changed in a float64", cursor)
	}
	assert.Len(t, seen, 3000)
	assert.Empty(t, missing(seen, "k", 3000))
	for k, n := range seen {
		assert.Equalf(t, 1, n, "%q returned %d times without a rebuild", k, n)
	}
}

// TestCursorFields checks the cursor's layout at its extremes: the last
// shard, a wrapped generation and the last slot, all below 2^53.
func TestCursorFields(t *testing.T) {
	assert.Less(t, uint64(MaxCursor), uint64(1)<<53)
	for _, tt := range []struct {
		si  int
		gen uint16
		pos uint32
	}{{0, 0, 1}, {MaxShards - 1, 0xffff, maxSlots}, {7, 8192 + 5, 12345}} {
		c := makeCursor(tt.si, tt.gen, tt.pos)
		assert.LessOrEqual(t, c, uint64(MaxCursor))
		si, gen, pos := splitCursor(c)
		assert.Equal(t, tt.si, si)
		assert.Equal(t, tt.gen&cursorGenMask, gen)
		assert.Equal(t, tt.pos, pos)
	}
}

func TestMemoryUsage(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	_, ok := m.MemoryUsage([]byte("nope"))
	assert.False(t, ok)
	addKeys(t, m, "k", 1, slideP(5, time.Minute), t0)
	small, ok := m.MemoryUsage([]byte("k0"))
	require.True(t, ok)
	assert.Equal(t, int64(slotBytes+4+2), small, "slot, index entry and key: the slot holds the length")
	long := strings.Repeat("x", 300)
	addKeys(t, m, long, 1, slideP(5, time.Minute), t0)
	n, ok := m.MemoryUsage([]byte(long + "0"))
	require.True(t, ok)
	assert.Equal(t, int64(slotBytes+4+2+301), n, "a key of 255 bytes or more has a length prefix")
	addKeys(t, m, "h", 1, slideP(5, time.Hour), t0)
	big, _ := m.MemoryUsage([]byte("h0"))
	assert.GreaterOrEqual(t, big, small, "a long window's counters count")
}
