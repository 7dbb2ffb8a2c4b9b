package shard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotPages allocates slots through the small pages into full ones and
// checks that every index names its own slot, pages never move, and the
// pages grow as documented.
func TestSlotPages(t *testing.T) {
	var s slots
	const n = 5000
	ptrs := make([]*slot, n)
	for i := range uint32(n) {
		require.Equal(t, i, s.alloc())
		ptrs[i] = s.at(i)
		ptrs[i].key = i + 1
	}
	for i := range uint32(n) {
		require.Same(t, ptrs[i], s.at(i), "slot %d moved", i)
		require.Equal(t, i+1, s.at(i).key, "slot %d", i)
	}
	var sizes []int
	for _, p := range s.pages {
		sizes = append(sizes, len(p))
	}
	assert.Equal(t, []int{32, 32, 64, 128, 256, 512, 1024, 1024, 1024, 1024}, sizes)
	s.release(7)
	assert.Equal(t, slot{}, *s.at(7))
	assert.Equal(t, uint32(7), s.alloc(), "a freed slot is reused first")
}

// TestArena adds keys of every size class, from empty to larger than a page,
// and checks each comes back, pages grow by doubling, and large keys do not
// close the page small keys go to.
func TestArena(t *testing.T) {
	var a arena
	var refs []uint32
	var keys [][]byte
	for i := range 3000 {
		n := i % 40
		if i%500 == 499 {
			n = arenaPage/4 + i // a page of its own
		}
		key := make([]byte, n)
		for j := range key {
			key[j] = byte(i + j)
		}
		ref, ok := a.add(key)
		require.True(t, ok)
		require.NotZero(t, ref)
		refs, keys = append(refs, ref), append(keys, key)
	}
	for i, ref := range refs {
		require.Equal(t, keys[i], a.get(ref), "key %d", i)
	}
	var small []int
	for _, p := range a.pages {
		if c := cap(p); c&(c-1) == 0 { // not a large key's own page
			small = append(small, cap(p))
		}
	}
	assert.Equal(t, []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10}, small)
	live := a.live
	a.drop(refs[0])
	assert.Equal(t, live-1, a.live)
}
