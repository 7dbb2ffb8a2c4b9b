package shard

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rlstore/rlstore/window"
)

// keyset holds n keys "user:0" … in one pointer-free buffer, so that the
// benchmark's own keys add nothing for the garbage collector to scan.
type keyset struct {
	buf  []byte
	ends []uint32
}

func makeKeys(n int) keyset {
	var ks keyset
	for i := range n {
		ks.buf = strconv.AppendInt(append(ks.buf, "user:"...), int64(i), 10)
		ks.ends = append(ks.ends, uint32(len(ks.buf)))
	}
	return ks
}

func (ks keyset) len() int { return len(ks.ends) }

func (ks keyset) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = ks.ends[i-1]
	}
	return ks.buf[start:ks.ends[i]:ks.ends[i]]
}

// The benchmarks' parameters admit nearly everything, so each decision charges.
var (
	benchSlide = slideP(1<<32-1, time.Minute)
	benchToken = tokenP(1e6, 1e6, time.Second)
)

// decider is the operation the benchmarks time: a Map or the baseline.
type decider interface {
	Decide(key []byte, p window.Params, now, cost int64, peek bool) (window.Decision, error)
}

// BenchmarkDecide times decisions on keys that exist, from parallel goroutines,
// over shard counts and key counts, against a baseline of one map and one
// mutex doing the same window work. Run with
//
//	go test -run '^$' -bench BenchmarkDecide -benchmem ./shard/
func BenchmarkDecide(b *testing.B) {
	for _, alg := range []struct {
		name string
		p    window.Params
	}{{"slide", benchSlide}, {"token", benchToken}} {
		for _, n := range []int{1, 1000, 1_000_000} {
			ks := makeKeys(n)
			for _, shards := range []int{1, 16, 256} {
				benchDecide(b, fmt.Sprintf("%s/keys=%d/shards=%d", alg.name, n, shards), ks, alg.p, func() decider {
					return newMap(b, Config{Shards: shards})
				})
			}
			benchDecide(b, fmt.Sprintf("%s/keys=%d/map+mutex", alg.name, n), ks, alg.p, func() decider {
				return &baseline{m: make(map[string]*baseEntry, n)}
			})
		}
	}
}

// benchDecide runs one sub-benchmark: it builds a decider with every key of
// ks present once (the first run only), then decides on random keys.
func benchDecide(b *testing.B, name string, ks keyset, p window.Params, build func() decider) {
	var d decider
	b.Run(name, func(b *testing.B) {
		if d == nil {
			d = build()
			for i := range ks.len() {
				if _, err := d.Decide(ks.key(i), p, t0, 1, false); err != nil {
					b.Fatal(err)
				}
			}
		}
		var seed atomic.Uint64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			x, now := seed.Add(0x9e3779b97f4a7c15), t0
			for pb.Next() {
				x ^= x << 13 // xorshift: a cheap random key per decision
				x ^= x >> 7
				x ^= x << 17
				now += 1000 // 1 µs of fake time per decision
				if _, err := d.Decide(ks.key(int(x%uint64(ks.len()))), p, now, 1, false); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// baseline is the plain design shard is measured against: one mutex around
// one map of pointers, with counters in ordinary slices.
type baseline struct {
	mu sync.Mutex
	m  map[string]*baseEntry
}

type baseEntry struct {
	p        window.Params
	counters []uint64
	state    window.State
}

func (bl *baseline) Decide(key []byte, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	e := bl.m[string(key)]
	if e == nil {
		e = &baseEntry{p: p}
		bl.m[string(key)] = e
	}
	e.p = p
	if p.Kind == window.KindToken {
		return p.Token().Decide(&e.state, now, cost, peek), nil
	}
	if len(e.counters) == cap(e.counters) {
		e.counters = append(e.counters, 0)[:len(e.counters)]
	}
	d, b := p.Slide().Decide(e.counters, now, cost, peek)
	e.counters = b
	return d, nil
}

// BenchmarkGC holds 10M Slide keys, each hit once, and times a forced GC:
// the target is 20 ms or less. The baseline holds the same keys in a
// map[string]*baseEntry. Run with
//
//	go test -run '^$' -bench BenchmarkGC -benchtime 20x ./shard/
func BenchmarkGC(b *testing.B) {
	const n = 10_000_000
	p := slideP(100, time.Minute)
	b.Run("keys=10M/shard", func(b *testing.B) {
		benchGC(b, n, p, newMap(b, Config{}))
	})
	b.Run("keys=10M/map[string]*entry", func(b *testing.B) {
		benchGC(b, n, p, &baseline{m: make(map[string]*baseEntry)})
	})
}

func benchGC(b *testing.B, n int, p window.Params, d decider) {
	var key []byte
	for i := range n {
		key = strconv.AppendInt(append(key[:0], "user:"...), int64(i), 10)
		if _, err := d.Decide(key, p, t0, 1, false); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		runtime.GC()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/GC")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/float64(n), "heap-B/key")
	b.ReportMetric(float64(ms.HeapObjects), "heap-objects")
	runtime.KeepAlive(d)
}

// BenchmarkFind times one shard's key lookup alone (findLocked: the index
// entry, the slot and the key bytes), on random keys that exist, from one
// goroutine, so that index designs can be compared without lock or
// algorithm costs. Take the fastest of several runs on a busy host:
//
//	go test -run '^$' -bench BenchmarkFind -count 10 ./shard/
func BenchmarkFind(b *testing.B) {
	for _, n := range []int{1000, 100_000, 1_000_000} {
		ks := makeKeys(n)
		s := newShard(xxhash.Sum64)
		hs := make([]uint64, n)
		for i := range n {
			hs[i] = xxhash.Sum64(ks.key(i))
			if _, ok := s.insertLocked(ks.key(i), hs[i]); !ok {
				b.Fatal("insert failed")
			}
		}
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			x := uint64(0x9e3779b97f4a7c15)
			for b.Loop() {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				k := int(x % uint64(n))
				if _, ok := s.findLocked(ks.key(k), hs[k]); !ok {
					b.Fatal("key lost")
				}
			}
		})
	}
}
