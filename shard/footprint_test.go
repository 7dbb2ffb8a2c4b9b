package shard

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilledMapHeapPerKey fills a Map that tracks changes, as it is with a
// data dir, the way loadtest/memrss.sh does over the network: keys like
// user:1000001:api hit twice by Slide 100/60 s, a second apart, the changes
// drained the way the log drains them. The live heap it holds afterwards must
// stay within what its structures need: per key a slot and the key's bytes,
// with the sixteenth more that chunks may hold unused, an index entry at the
// index's lowest fill, and a dirty bit; per shard a partly used arena page,
// slot page and index page. Pages grown
// by doubling and copied, drain buffers kept after a burst, or change lists
// that keep every slot would each break the bound.
func TestFilledMapHeapPerKey(t *testing.T) {
	n, shards := 200_000, 16
	if testing.Short() || underRace {
		n = 50_000
	}
	live0 := liveHeap()
	m := newMap(t, Config{Shards: shards})
	m.TrackChanges()
	p := slideP(100, time.Minute)
	var buf ExportBuffer
	var ents []Entry
	key := make([]byte, 0, 32)
	for hit := range int64(2) {
		for i := range n {
			key = fmt.Appendf(key[:0], "user:%07d:api", 1000001+i)
			_, err := m.Decide(key, p, t0+hit*sec, 1, false)
			require.NoError(t, err)
			if i%5000 == 0 {
				for s := range m.Shards() {
					ents = m.DrainDirtyTo(s, ents[:0], &buf)
				}
			}
		}
	}
	live := liveHeap() - live0
	perKey := float64(slotBytes+storedLen(len(key)))*(1+1.0/chunkFraction) + 4/0.7 + 1.0/8
	perShard := float64(arenaPage + slotsPerPage*slotBytes + 4*pageEntries/4)
	bound := perKey + perShard*float64(shards)/float64(n)
	got := float64(live) / float64(n)
	t.Logf("%d keys over %d shards: live heap %.1f B/key, bound %.1f B/key; Stats().Bytes %.1f B/key",
		n, shards, got, bound, float64(m.Stats().Bytes)/float64(n))
	assert.LessOrEqual(t, got, bound)
	runtime.KeepAlive(m)
	runtime.KeepAlive(ents)
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
