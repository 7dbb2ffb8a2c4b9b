package main

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The store keeps its state in pointer-free pages that the garbage collector
// does not scan, so a collection costs little however many keys are held.
// Go's default GOGC of 100 still lets the heap grow to twice the live data
// before collecting, which would double the RSS each key costs. tuneGC keeps
// the headroom near gcHeadroom instead: generous while the heap is small, and
// down to a twentieth of it once millions of keys are held.
//
// Memory the heap frees stays resident until Go's background scavenger
// returns it, which takes minutes: after filling 1M keys, 7 MB of free heap
// (7 bytes a key) was still resident. So once the live heap has moved by
// releaseMin or an eighth since the last release (a fill, or shard rebuilds
// after keys expired) and then held still for a tick, tuneGC returns the free
// heap at once. Steady traffic never triggers it, so pages are not given back
// only to be faulted in again.
const (
	gcHeadroom   = 4 << 20 // bytes of garbage allowed before a collection
	gcMinPercent = 5
	gcMaxPercent = 100
	releaseMin   = 16 << 20 // bytes the live heap must move before a release
	releaseStill = 1 << 20  // at most this much movement in a tick counts as still
)

// gcPercent returns the GOGC that allows about gcHeadroom bytes over live.
func gcPercent(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	return int(min(max(gcHeadroom*100/live, gcMinPercent), gcMaxPercent))
}

// releaser decides when to return free heap to the OS.
type releaser struct {
	mark uint64 // live heap at the last release
	prev uint64 // live heap at the last tick
}

// due reports whether free heap should be returned now, with live bytes in use.
func (r *releaser) due(live uint64) bool {
	moved, step := absDiff(live, r.mark), absDiff(live, r.prev)
	r.prev = live
	if moved < max(releaseMin, r.mark/8) || step > releaseStill {
		return false
	}
	r.mark = live
	return true
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// tuneGC adjusts GOGC to the live heap every interval until ctx ends, and
// returns free heap to the OS after the live heap has grown or shrunk a lot.
// It does nothing if the operator set GOGC, whose choice wins.
func tuneGC(ctx context.Context, interval time.Duration, lookupEnv func(string) (string, bool)) {
	if _, set := lookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var r releaser
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live := sample[0].Value.Uint64()
			debug.SetGCPercent(gcPercent(live))
			if r.due(live) {
				debug.FreeOSMemory()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// memoryLimit returns the soft limit on the process's memory (GOMEMLIMIT)
// for a --maxmemory of maxMemory bytes of key state: a quarter more for
// what the heap frees between collections, and 64 MiB for connections and
// the runtime. Near it the collector runs more often and the scavenger
// returns free memory at once. With no maxmemory there is no limit.
func memoryLimit(maxMemory int64) int64 {
	if maxMemory <= 0 {
		return math.MaxInt64
	}
	m := min(maxMemory, math.MaxInt64/4) // no overflow
	return m + m/4 + 64<<20
}

// setMemoryLimit applies memoryLimit unless the operator set GOMEMLIMIT,
// whose choice wins, and returns a func that puts back the limit it replaced.
func setMemoryLimit(maxMemory int64, lookupEnv func(string) (string, bool)) (restore func()) {
	if _, set := lookupEnv("GOMEMLIMIT"); set {
		return func() {}
	}
	prev := debug.SetMemoryLimit(memoryLimit(maxMemory))
	return func() { debug.SetMemoryLimit(prev) }
}
