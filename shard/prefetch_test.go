package shard

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Prefetch changes nothing: decisions after it are the decisions without it,
// for present keys, absent ones and keys whose hashes collide.
func TestPrefetchChangesNothing(t *testing.T) {
	for _, collide := range []bool{false, true} {
		cfg := Config{Shards: 4}
		if collide {
			cfg.Hash = func([]byte) uint64 { return 42 }
		}
		a, err := New(cfg)
		require.NoError(t, err)
		b, err := New(cfg)
		require.NoError(t, err)
		p := slideP(5, time.Minute)
		now := time.Now().UnixNano()
		a.prefetchFrom = 0 // prefetch even though the Map is small
		rng := rand.New(rand.NewPCG(3, 4))
		for round := range 200 {
			var keys [][]byte
			for range 1 + rng.IntN(20) {
				keys = append(keys, []byte("pf:"+strconv.Itoa(rng.IntN(300))))
			}
			hashes := make([]uint64, len(keys))
			a.Prefetch(keys, hashes)
			for i, k := range keys {
				require.Equal(t, a.hash(k), hashes[i])
				da, ea := a.DecideHashed(k, hashes[i], p, now+int64(round)*int64(time.Millisecond), 1, false)
				db, eb := b.Decide(k, p, now+int64(round)*int64(time.Millisecond), 1, false)
				require.Equal(t, db, da)
				require.Equal(t, eb, ea)
			}
		}
		assert.Equal(t, b.Stats().Keys, a.Stats().Keys)
	}
}

// BenchmarkDecidePipelined decides batches of 16 random keys from one
// goroutine, as one connection's pipeline does, with and without Prefetch.
// cpu-ns/decision is the goroutine's thread's CPU time, which other load on
// a shared host moves less than wall time.
func BenchmarkDecidePipelined(b *testing.B) {
	for _, n := range []int{1000, 100_000, 1_000_000} {
		for _, pf := range []bool{false, true} {
			b.Run("keys="+strconv.Itoa(n)+"/prefetch="+strconv.FormatBool(pf), func(b *testing.B) {
				benchPipelined(b, n, pf)
			})
		}
	}
}

func benchPipelined(b *testing.B, n int, pf bool) {
	m, err := New(Config{})
	require.NoError(b, err)
	ks := makeKeys(n)
	now := time.Now().UnixNano()
	for i := range n {
		_, _ = m.Decide(ks.key(i), benchSlide, now, 1, false)
	}
	decideBatches(b, m, ks, n, benchSlide, now, 1000, pf)
}

// decideBatches decides batches of prefetchWidth random keys of ks's first
// n, with Prefetch first if pf, each decision step ns after the last, and
// reports the calling thread's CPU per decision.
func decideBatches(b *testing.B, m *Map, ks keyset, n int, p window.Params, now, step int64, pf bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([][]byte, prefetchWidth)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu, decisions := threadCPU(), 0
	for b.Loop() {
		for j := range batch {
			batch[j] = ks.key(rng.IntN(n))
		}
		if pf {
			m.Prefetch(batch, nil)
		}
		for _, k := range batch {
			now += step
			_, _ = m.Decide(k, p, now, 1, false)
		}
		decisions += len(batch)
	}
	b.ReportMetric(float64(threadCPU()-cpu)/float64(decisions), "cpu-ns/decision")
}

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Prefetch runs alongside decisions that add keys, and so grow and split
// index pages, sweeps that free them and rebuilds that make a new index:
// its first pass reads an indexView without the lock, which must race
// with none of them (go test -race).
func TestPrefetchRacesNothing(t *testing.T) {
	m, err := New(Config{Shards: 4})
	require.NoError(t, err)
	m.prefetchFrom = 0
	p := slideP(5, time.Second)
	now := time.Now().UnixNano()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		keys := make([][]byte, 16)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for j := range keys {
				keys[j] = []byte("race:" + strconv.Itoa(rng.IntN(20000)))
			}
			m.Prefetch(keys, nil)
		}
	}()
	for round := range 4 {
		for i := range 5000 {
			_, err := m.Decide([]byte("race:"+strconv.Itoa(round*5000+i)), p, now, 1, false)
			require.NoError(t, err)
		}
		now += int64(time.Hour)
		m.Sweep(now, 1<<20) // frees every key, and rebuilds the shards they leave empty
	}
	close(stop)
	wg.Wait()
}
