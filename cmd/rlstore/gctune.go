package main

import (
	"context"
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
const (
	gcHeadroom   = 4 << 20 // bytes of garbage allowed before a collection
	gcMinPercent = 5
	gcMaxPercent = 100
)

// gcPercent returns the GOGC that allows about gcHeadroom bytes over live.
func gcPercent(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	return int(min(max(gcHeadroom*100/live, gcMinPercent), gcMaxPercent))
}

// tuneGC adjusts GOGC to the live heap every interval until ctx ends. It does
// nothing if the operator set GOGC, whose choice wins.
func tuneGC(ctx context.Context, interval time.Duration, lookupEnv func(string) (string, bool)) {
	if _, set := lookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			debug.SetGCPercent(gcPercent(sample[0].Value.Uint64()))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
