package shard

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
)

// BenchmarkImportBatch is a backup's import of changed keys into copies it
// already holds, 4096 random keys a batch in a shipment's order (shard by
// shard, as the primary drained them), with and without readying each
// run's lookups first.
func BenchmarkImportBatch(b *testing.B) {
	p := window.Params{Kind: window.KindSlide, Limit: 1 << 20, Period: time.Minute}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		m := newMap(b, Config{})
		c, _ := p.Kind.Counter(now/1e9, 3)
		es := make([]Entry, n)
		for i := range es {
			es[i] = Entry{Key: fmt.Appendf(nil, "k:{06S}:%012d", i), Params: p, Counters: []uint64{c}}
		}
		for i := 0; i < n; i += 256 {
			if _, err := m.ImportBatch(es[i:min(i+256, n)], now); err != nil {
				b.Fatal(err)
			}
		}
		for _, pf := range []bool{true, false} {
			b.Run(fmt.Sprintf("keys=%d/prefetch=%v", n, pf), func(b *testing.B) {
				m.prefetchFrom = prefetchKeys
				if !pf {
					m.prefetchFrom = math.MaxInt64
				}
				rng := rand.New(rand.NewPCG(1, 2))
				batch := make([]Entry, 4096)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					for i := range batch {
						batch[i] = es[rng.IntN(n)]
					}
					slices.SortFunc(batch, func(x, y Entry) int { // in drain order: shard by shard
						return cmp.Compare(m.hash(x.Key)&m.mask, m.hash(y.Key)&m.mask)
					})
					b.StartTimer()
					if _, err := m.ImportBatch(batch, now); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/key")
			})
		}
	}
}
