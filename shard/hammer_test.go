package shard

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
)

// TestHammerOneKey has many goroutines race for one key at one instant:
// exactly limit units are admitted, whatever the interleaving.
func TestHammerOneKey(t *testing.T) {
	const goroutines, tries, limit = 16, 200, 1000
	for _, p := range []window.Params{slideP(limit, time.Minute), tokenP(limit, 1, time.Hour)} {
		t.Run(p.Kind.String(), func(t *testing.T) {
			m := newMap(t, Config{})
			var admitted atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range goroutines {
				wg.Go(func() {
					<-start
					for range tries {
						d, err := m.Decide([]byte("hot"), p, t0, 1, false)
						if assert.NoError(t, err) && d.Allowed {
							admitted.Add(1)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			assert.EqualValues(t, limit, admitted.Load(), "%d goroutines × %d tries", goroutines, tries)
			assert.EqualValues(t, limit, m.Stats().Allowed)
		})
	}
}

// TestHammerManyKeys runs random operations from many goroutines over keys
// that share shards, alongside a goroutine that sweeps and one that scans.
// Each goroutine owns its keys and checks every reply against its own
// reference model, so operations on a key are serialised while the shards see
// them interleaved. A goroutine's clock only moves forward and Sweep runs
// behind every goroutine's clock, so a sweep never changes a decision; a key
// it freed must have expired more than the grace period before.
func TestHammerManyKeys(t *testing.T) {
	const goroutines, keys, ops = 8, 40, 3000
	m := newMap(t, Config{Shards: 16, Grace: time.Second})
	clocks := make([]atomic.Int64, goroutines)
	for i := range clocks {
		clocks[i].Store(t0)
	}
	stop := make(chan struct{})
	var bg, wg sync.WaitGroup
	bg.Go(func() { sweepBehind(m, clocks, stop) })
	bg.Go(func() { scanUntil(t, m, stop) })
	for g := range goroutines {
		wg.Go(func() { hammer(t, m, g, keys, ops, &clocks[g]) })
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	checkInvariants(t, m)
	assert.Positive(t, m.Stats().Swept, "the sweeper never freed a key")
}

// hammerParams are the parameters a hammered key may use, picked by its
// number, and changed at random between requests. A Slide key keeps its
// window: a sweep under a short window frees counters that a longer one
// would still count, which is a legitimate difference from the model.
var hammerParams = [3][]window.Params{
	{slideP(5, 3*time.Second), slideP(20, 3*time.Second)},
	{tokenP(4, 2, time.Second), tokenP(10, 1, time.Minute), tokenP(1, 1, time.Second)},
	{slideP(8, time.Minute), slideP(30, time.Minute)},
}

// hammer runs ops random operations on goroutine g's keys, advancing clock.
func hammer(t *testing.T, m *Map, g, keys, ops int, clock *atomic.Int64) {
	r := rand.New(rand.NewPCG(uint64(g), 7))
	ref, now := newModel(), t0
	for range ops {
		now += r.Int64N(int64(300 * time.Millisecond))
		clock.Store(now)
		n := r.IntN(keys)
		key := fmt.Sprintf("g%d:k%d", g, n)
		ok := true
		switch op := r.IntN(10); {
		case op < 7:
			ps := hammerParams[n%3]
			_, ok = agree(t, m, ref, key, ps[r.IntN(len(ps))], now, 1+r.Int64N(3), op == 0)
		case op < 9:
			ok = getBoth(t, m, ref, key, now)
		default:
			existed := m.Delete([]byte(key))
			ok = assert.True(t, existed == (ref.keys[key] != nil) || swept(t, ref, key, now), "Delete(%q) = %v", key, existed)
			delete(ref.keys, key)
		}
		if !ok {
			return
		}
	}
}

// getBoth compares key's Info in m and in the model, dropping it from the
// model if Sweep has freed it.
func getBoth(t *testing.T, m *Map, ref *model, key string, now int64) bool {
	got, ok := m.Get([]byte(key), now)
	k := ref.keys[key]
	switch {
	case ok && k != nil:
		return assert.Equal(t, k.info(now), got, "Get(%q)", key)
	case ok:
		return assert.Fail(t, "Get found a key the model does not have", "%q", key)
	case k != nil:
		defer delete(ref.keys, key)
		return swept(t, ref, key, now)
	}
	return true
}

// swept asserts that the model's key, which the Map no longer has, had expired
// more than the Map's grace before now (the hammer's Grace, 1 s).
func swept(t *testing.T, ref *model, key string, now int64) bool {
	k := ref.keys[key]
	return k == nil || assert.Less(t, k.info(now).Expiry, now-int64(time.Second), "%q freed while still restricting", key)
}

// sweepBehind sweeps m in small budgets at the earliest of the clocks until stop.
func sweepBehind(m *Map, clocks []atomic.Int64, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		now := clocks[0].Load()
		for i := range clocks {
			now = min(now, clocks[i].Load())
		}
		m.Sweep(now, 64)
	}
}

// scanUntil walks m with Scan, over and over, until stop.
func scanUntil(t *testing.T, m *Map, stop <-chan struct{}) {
	var keys [][]byte
	for cursor := uint64(0); ; {
		select {
		case <-stop:
			return
		default:
		}
		keys, cursor = m.Scan(keys[:0], cursor, 10)
		for _, k := range keys {
			if !assert.Regexp(t, `^g\d+:k\d+$`, string(k)) {
				return
			}
		}
	}
}
