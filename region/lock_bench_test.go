package region

import (
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
)

// lockedStore is a Store behind its mutex, as the server keeps it.
type lockedStore struct {
	mu sync.Mutex // guards s
	s  *Store
	_  [40]byte // its own cache line: the shards' locks must not share one
}

// BenchmarkLockShards asks whether the one lock a region's table sits
// behind costs anything: global decisions from every CPU (RunParallel) on
// 1,000 keys of a one-minute SLIDE limit, with the table whole behind one
// mutex (shards=1, what the server does) and split by key hash into 2, 8
// or 64 Stores, each behind its own (the most that sharding the table
// could save: it leaves out the per-shard syncs, epochs and echoes the
// real thing needs). Run it with -cpu 1,2,… side by side: the lock matters
// where shards=1 is slower than more shards at the same -cpu. The lock is
// held for nearly the whole operation here, so this is the worst case for
// contention; the server's decisions do more work outside it.
func BenchmarkLockShards(b *testing.B) {
	const keys = 1000
	names := make([][]byte, keys)
	shardOf := make([]uint64, keys)
	for i := range names {
		names[i] = []byte(fmt.Sprintf("user:%011d", i))
		h := fnv.New64a()
		_, _ = h.Write(names[i])
		shardOf[i] = h.Sum64()
	}
	lim := Limit{Kind: window.KindSlide, Limit: 1 << 31, Window: time.Minute}
	for _, shards := range []int{1, 2, 8, 64} {
		b.Run(fmt.Sprint("shards=", shards), func(b *testing.B) {
			stores := make([]lockedStore, shards)
			for i := range stores {
				stores[i].s, _ = New(Defaults(0, 3))
			}
			var n, clock atomic.Int64
			for k := range names { // make every key first: the benchmark is of decisions
				stores[shardOf[k]&uint64(shards-1)].s.Decide(names[k], lim, t0, 1, false)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(n.Add(1)) * 7919
				for pb.Next() {
					i++
					k := i % keys
					ls := &stores[shardOf[k]&uint64(shards-1)]
					now := t0 + clock.Add(1000) // one clock for all, as the server's
					ls.mu.Lock()
					d := ls.s.Decide(names[k], lim, now, 1, false)
					ls.mu.Unlock()
					if !d.Allowed {
						b.Fatal("denied")
					}
				}
			})
		})
	}
}
