package gateway

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOverCache checks the cache's rules: an entry answers only for its
// window and for limits below the count it saw; a key that is not there
// is not over, whatever its hash; and its memory never grows, however
// many keys go through it.
func TestOverCache(t *testing.T) {
	assert.Nil(t, newOverCache(0))
	c := newOverCache(64 << 10)
	k := []byte("rls:api:ip=1|c60")
	c.add(k, 120, 3)
	assert.True(t, c.over(k, 120, 2))
	assert.False(t, c.over(k, 120, 3), "a limit the count is not over")
	assert.False(t, c.over(k, 180, 2), "another window")
	assert.False(t, c.over([]byte("rls:api:ip=2|c60"), 120, 2))
	c.add(k, 120, 2) // a lower count seen later does not lower it
	assert.True(t, c.over(k, 120, 2))
	c.add(k, 180, 5)
	assert.True(t, c.over(k, 180, 4))
	assert.False(t, c.over(k, 120, 2), "the entry moved to the next window")

	s := &c.shards[0]
	slots, arena := len(s.index), cap(s.arena)
	for i := range 100000 {
		c.add(fmt.Appendf(nil, "rls:api:ip=%d|c60", i), 120, 3)
		require.LessOrEqual(t, 2*s.used, len(s.index))
	}
	assert.Equal(t, slots, len(s.index))
	assert.Equal(t, arena, cap(s.arena))
	assert.True(t, c.over([]byte("rls:api:ip=99999|c60"), 120, 2), "the newest key is kept")
	big := make([]byte, arena)
	c.add(big, 120, 3)
	assert.False(t, c.over(big, 120, 2), "a key too big for the cache is not kept")
}

// TestOverCacheHashIsAHint checks that two keys with one hash are told
// apart by their bytes.
func TestOverCacheHashIsAHint(t *testing.T) {
	c := newOverCache(64 << 10)
	s := &c.shards[0]
	a, b := []byte("a"), []byte("b")
	h := c.hash(a)
	i, _ := s.findLocked(h, a)
	s.index[i] = overSlot{hash: h, end: 60, count: 9, off: 0, len: 1}
	s.arena = append(s.arena, a...)
	_, found := s.findLocked(h, b)
	assert.False(t, found, "b has a's hash but not its bytes")
	_, found = s.findLocked(h, a)
	assert.True(t, found)
}

func BenchmarkOverCache(b *testing.B) {
	c := newOverCache(1 << 20)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "rls:api:ip=10.0.%d.%d|c60", i/256, i%256)
		c.add(keys[i], 60, 3)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.over(keys[i&1023], 60, 2)
			i++
		}
	})
}
