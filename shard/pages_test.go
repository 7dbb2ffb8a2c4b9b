package shard

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlotPages allocates slots through the small pages into full ones and
// checks that every index names its own slot, pages never move, and the
// pages grow as documented.
func TestSlotPages(t *testing.T) {
	var s slots
	const n = 2000
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
	for _, p := range s.small {
		sizes = append(sizes, len(p))
	}
	for _, p := range s.pages {
		sizes = append(sizes, len(p))
	}
	var want []int // each page as large as all before it: firstPage, firstPage, 2*firstPage, ...
	for total := 0; len(want) < len(sizes); total += want[len(want)-1] {
		want = append(want, min(slotsPerPage, max(firstPage, total)))
	}
	assert.Equal(t, want, sizes)
	assert.Equal(t, smallPages, slices.Index(sizes, slotsPerPage), "smallPages small pages come first")
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
		if i%100 == 50 {
			n = longKey - 5 + i/100%10 // around the longest key with no length prefix
		}
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
		require.Equal(t, keys[i], a.get(ref, lenField(len(keys[i]))), "key %d", i)
	}
	var small []int
	for _, p := range a.pages {
		if c := cap(p); c&(c-1) == 0 { // not a large key's own page
			small = append(small, cap(p))
		}
	}
	want := []int{arenaFirstPage}
	for len(want) < len(small) {
		want = append(want, min(arenaPage, 2*want[len(want)-1]))
	}
	assert.Equal(t, want, small)
	assert.Greater(t, len(small), 5, "pages reach full size")
	assert.Equal(t, arenaPage, small[len(small)-1])
	live := a.live
	a.drop(refs[0], 0)
	assert.Equal(t, live-1, a.live, "an empty key takes a byte")
	a.drop(refs[1], 1)
	assert.Equal(t, live-2, a.live, "a one-byte key takes a byte, no length")
	a.drop(refs[550], longKey) // 255 bytes
	assert.Equal(t, live-2-(2+longKey), a.live, "a 255-byte key has a length prefix")
}

// TestIndex inserts and removes keys at random in a shard whose hash has only
// a few dozen values, so that probes run long, wrap around the table and
// cross tombstones, and pages that cannot split double instead; and in
// shards with thousands of keys, so that pages split and the directory
// doubles. It checks that each key is found in its own slot and that the
// index's counts and directory add up.
func TestIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		values     uint64
		keys       int
		steps      int
		checkEvery int
	}{
		{1, 400, 3000, 1}, {7, 400, 3000, 1}, {50, 400, 3000, 1}, {1 << 62, 400, 3000, 1},
		{1, 2500, 6000, 100}, {50, 20000, 50000, 1000}, {1 << 62, 40000, 100000, 2000},
	} {
		hash := func(b []byte) uint64 { return xxhash.Sum64(b) % tc.values * 0x9e3779b97f4a7c15 }
		s := newShard(hash)
		slotOf := map[string]uint32{}
		for step := range tc.steps {
			key := fmt.Sprintf("k%d", r.IntN(tc.keys))
			i, ok := s.findLocked([]byte(key), hash([]byte(key)))
			want, had := slotOf[key]
			require.Equal(t, had, ok, "step %d: find(%q)", step, key)
			if had {
				require.Equal(t, want, i, "step %d: find(%q)", step, key)
				s.removeLocked(i, hash([]byte(key)))
				delete(slotOf, key)
			} else {
				i, ok = s.insertLocked([]byte(key), hash([]byte(key)))
				require.True(t, ok)
				s.slots.at(i).setParam(s.params.acquire(slideP(1, time.Second)))
				slotOf[key] = i
			}
			if step%tc.checkEvery == 0 {
				checkIndex(t, &s.index)
			}
		}
		checkIndex(t, &s.index)
		for key, i := range slotOf {
			j, ok := s.findLocked([]byte(key), hash([]byte(key)))
			require.True(t, ok)
			require.Equal(t, i, j)
		}
		if tc.keys > 2*pageEntries && tc.values > 2 {
			assert.Greater(t, len(s.index.pages), 1, "%d keys split no page", len(slotOf))
		}
	}
}

// TestIndexSized checks that an index made for n keys holds them in tables
// at most half full, and that filling it splits nothing.
func TestIndexSized(t *testing.T) {
	for _, n := range []int{1, 7, 100, 511, 512, 3000, 40000} {
		s := newShard(xxhash.Sum64)
		s.index = sized(n)
		pages := len(s.index.pages)
		for k := range n {
			key := fmt.Appendf(nil, "k%d", k)
			_, ok := s.insertLocked(key, xxhash.Sum64(key))
			require.True(t, ok)
		}
		checkIndex(t, &s.index)
		total := 0
		for _, tab := range s.index.pages {
			total += len(tab)
		}
		assert.GreaterOrEqual(t, total, 2*n, "n=%d", n)
		assert.LessOrEqual(t, total, max(4*n, 16), "n=%d", n)
		if n <= pageEntries/2 {
			assert.Equal(t, pages, len(s.index.pages), "n=%d: a sized index grew", n)
		}
	}
}

// checkIndex asserts that x's counts match its entries, that no page passes
// its fill unless its keys cannot be split apart, and that the directory
// names each page from one aligned run of entries as long as its depth says.
func checkIndex(t *testing.T, x *index) {
	t.Helper()
	live, dead := 0, 0
	for p, tab := range x.pages {
		used, pdead := 0, 0
		for _, e := range tab {
			switch {
			case e == tombstone:
				pdead++
			case e != 0:
				used++
			}
		}
		m := x.meta[p]
		require.Equal(t, int(m.used), used+pdead, "page %d: used entries", p)
		require.Equal(t, int(m.dead), pdead, "page %d: tombstones", p)
		require.Less(t, used+pdead, len(tab), "page %d: an entry must stay empty", p)
		require.True(t, used+pdead <= pageFill(len(tab)), "page %d: %d of %d entries used", p, used+pdead, len(tab))
		live, dead = live+used, dead+pdead
	}
	require.Equal(t, x.live, live, "live entries")
	require.Equal(t, x.dead, dead, "tombstones")
	if len(x.pages) == 0 {
		return
	}
	depth := 64 - int(x.shift)
	require.Len(t, x.dir, 1<<depth)
	require.Len(t, x.tabs, len(x.dir))
	for k, p := range x.dir {
		require.Equal(t, len(x.pages[p]), len(x.tabs[k]), "directory entry %d", k)
		if len(x.tabs[k]) > 0 {
			require.Same(t, &x.pages[p][0], &x.tabs[k][0], "directory entry %d's table", k)
		}
	}
	for k := 0; k < len(x.dir); {
		p := int(x.dir[k])
		span := 1 << (depth - int(x.meta[p].depth))
		require.Zero(t, k%span, "page %d's run starts unaligned", p)
		for j := k; j < k+span; j++ {
			require.Equal(t, p, int(x.dir[j]), "directory entry %d", j)
		}
		k += span
	}
}

// TestChunk cuts pages from chunks: every page is its own memory, chunks
// grow with the pages already cut, and what was allocated is accounted.
func TestChunk(t *testing.T) {
	var c chunk[uint64]
	var pages [][]uint64
	total := 0
	for have := range 300 {
		p, allocated := c.page(8, 8*have)
		require.Len(t, p, 8)
		require.Equal(t, 8, cap(p), "a page must not reach into the next")
		total += allocated
		p[0], p[7] = uint64(have), uint64(have)
		pages = append(pages, p)
	}
	for i, p := range pages {
		require.Equal(t, []uint64{uint64(i), uint64(i)}, []uint64{p[0], p[7]}, "page %d was overwritten", i)
	}
	assert.Equal(t, total, 300*8+len(c.spare))
	assert.LessOrEqual(t, len(c.spare), 8*maxChunkPages)
	assert.LessOrEqual(t, len(c.spare), 300*8/chunkFraction, "at most a sixteenth waits unused")
}

// TestKeyLengths runs keys of every length class through a Map: empty, short
// ones whose length only their slot holds, and from longKey bytes on, whose
// length the arena holds too; keys that differ only in length must stay
// apart, and survive a rebuild, an export and a delete.
func TestKeyLengths(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	keys := [][]byte{{}}
	for _, n := range []int{1, 2, longKey - 1, longKey, longKey + 1, 1000, arenaPage} {
		keys = append(keys, bytes.Repeat([]byte("a"), n), bytes.Repeat([]byte("b"), n))
	}
	p := slideP(10, time.Minute)
	for i, k := range keys {
		for range i%3 + 1 {
			_, err := m.Decide(k, p, t0, 1, false)
			require.NoError(t, err)
		}
	}
	check := func(what string) {
		for i, k := range keys {
			info, ok := m.Get(k, t0)
			require.True(t, ok, "%s: key of %d bytes", what, len(k))
			assert.Equal(t, int64(i%3+1), info.Count, "%s: key of %d bytes", what, len(k))
		}
		got := map[string]bool{}
		for _, e := range m.ExportShard(0, nil) {
			got[string(e.Key)] = true
		}
		assert.Len(t, got, len(keys), what)
	}
	check("added")
	s := m.shards[0]
	s.mu.Lock()
	s.rebuildLocked()
	s.mu.Unlock()
	check("rebuilt")
	for _, k := range keys {
		require.True(t, m.Delete(k), "key of %d bytes", len(k))
	}
	assert.Zero(t, m.Len())
	assert.Zero(t, s.keys.live, "every key's bytes are given back")
}
