package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// The store keeps its state in pointer-free pages that the garbage collector
// does not scan, so a collection costs little however many keys are held.
// Go's default GOGC of 100 still lets the heap grow to twice the live data
// before collecting, which would double the RSS each key costs. tuneGC keeps
// the headroom near gcHeadroom instead: generous while the heap is small, and
// down to a twentieth of it once millions of keys are held.
//
// Memory the heap frees stays resident until Go's scavenger returns it, and
// the scavenger keeps up to a tenth of the heap goal: after filling 1M keys,
// 6–7 MB of free heap (7 bytes a key) was still resident. So tuneGC also
// keeps the soft memory limit (GOMEMLIMIT) just above what the heap goal and
// the runtime's own overhead need, and the scavenger returns free memory
// beyond it as it appears: after a fill, and after shard rebuilds free a lot.
// The limit never rises above one the operator or --maxmemory set; while the
// live heap grows faster than limitSlack a tick, collections come sooner.
//
// The heap goal itself allows gcHeadroom of garbage, which stays resident
// until the next collection: right after a 1M-key fill with a data dir 1.9
// to 2.9 MB of it was left with 4 MiB of headroom (and a floor of 5%), about
// 1 MB with 2 MiB (and 3%), for twice the collections during the fill (each
// under a millisecond of pause; the store's pages hold no pointers). And an
// idle server never collects: 2 s after
// a 1M-key fill RSS had grown by 4 MB. So once releaseAfter bytes have been
// allocated since the last release and allocation has gone quiet (the end
// of a fill, of a burst of shard rebuilds, or of a busy spell), tuneGC
// collects and returns the free heap at once. Busy traffic is never quiet,
// so it never pays for that.
const (
	gcHeadroom   = 2 << 20 // bytes of garbage allowed before a collection
	gcMinPercent = 3
	gcMaxPercent = 100
	limitSlack   = 2 << 20   // bytes the limit allows past goal and overhead
	releaseAfter = 4 << 20   // bytes allocated since the last release that call for one
	quietAllocs  = 256 << 10 // bytes allocated in a tick that still count as quiet
)

// The gRPC gateway (--grpc-port) allocates where RESP does not: grpc-go's
// transport makes about 60 objects per call, some 5 KB, so at 15k calls a
// second gcHeadroom meant dozens of collections a second, and each one
// also shrank the stacks of grpc's stream workers, which then grew again
// (runtime.copystack). A server with the gateway on allows
// gatewayGCHeadroom of garbage instead (up to gatewayGCMaxPercent of the
// live heap): memory that does not grow with the keys, for about 0.7x the
// CPU per call (BENCHMARKS.md, "Gateway").
const (
	gatewayGCHeadroom   = 64 << 20
	gatewayGCMaxPercent = 800
)

// gcBudget is how much garbage tuneGC lets the heap hold; the zero value
// is the default (gcHeadroom), and a start with the gateway raises it.
// Safe for concurrent use.
type gcBudget struct{ gateway atomic.Bool }

// forGateway raises the budget to the gateway's.
func (b *gcBudget) forGateway() {
	if b != nil {
		b.gateway.Store(true)
	}
}

// percent returns the GOGC that allows about the budget's headroom over live.
func (b *gcBudget) percent(live uint64) int {
	if b != nil && b.gateway.Load() {
		return gcPercentOf(live, gatewayGCHeadroom, gatewayGCMaxPercent)
	}
	return gcPercent(live)
}

// gcPercent returns the GOGC that allows about gcHeadroom bytes over live.
func gcPercent(live uint64) int { return gcPercentOf(live, gcHeadroom, gcMaxPercent) }

func gcPercentOf(live, headroom uint64, maxPercent int) int {
	if live == 0 {
		return maxPercent
	}
	return int(min(max(headroom*100/live, gcMinPercent), uint64(maxPercent)))
}

// tightLimit returns the memory limit for a heap goal of goal bytes and
// overhead bytes of memory outside the heap: enough that the scavenger,
// which aims at 95% of the limit, keeps both and little else.
func tightLimit(goal, overhead uint64) int64 {
	return int64(min((goal+overhead)/95*100+limitSlack, math.MaxInt64/2))
}

// limiter keeps the memory limit tight without raising one set by others.
type limiter struct {
	set     int64 // the limit it set last; 0 before the first
	ceiling int64 // the limit in force when someone else last set one
}

// next returns the limit to set, given the one in force and the tight one.
func (l *limiter) next(current, tight int64) int64 {
	if current != l.set {
		l.ceiling = current // --maxmemory, or a test, set it
	}
	l.set = min(l.ceiling, tight)
	return l.set
}

// releaser decides when to collect and return the free heap at once.
type releaser struct {
	allocs uint64 // bytes allocated since the start, at the last tick
	mark   uint64 // the same at the last release
}

// due reports whether to release now, given the bytes allocated since the start.
func (r *releaser) due(allocs uint64) bool {
	quiet := allocs-r.allocs < quietAllocs
	r.allocs = allocs
	if !quiet || allocs-r.mark < releaseAfter {
		return false
	}
	r.mark = allocs
	return true
}

// tuneGC adjusts GOGC to the live heap, and the memory limit to the heap
// goal, every interval until ctx ends, and after every collection as well:
// when memory grows faster than limitSlack between two ticks, the
// collector runs back to back until the limit is raised (see notifyGC).
// It does nothing if the operator set GOGC, whose choice wins, and leaves
// the memory limit alone if the operator set GOMEMLIMIT.
// budget may be nil: the default.
func tuneGC(ctx context.Context, interval time.Duration, lookupEnv func(string) (string, bool), budget *gcBudget) {
	if _, set := lookupEnv("GOGC"); set {
		return
	}
	_, fixedLimit := lookupEnv("GOMEMLIMIT")
	sample := heapSamples()
	var l limiter
	var r releaser
	t := time.NewTicker(interval)
	defer t.Stop()
	collected := make(chan struct{}, 1)
	notifyGC(ctx, collected)
	tick := true
	for {
		live, overhead, allocs := readHeap(sample)
		pct := budget.percent(live)
		debug.SetGCPercent(pct)
		if !fixedLimit {
			goal := live + live*uint64(pct)/100
			debug.SetMemoryLimit(l.next(debug.SetMemoryLimit(-1), tightLimit(goal, overhead)))
		}
		if tick && r.due(allocs) { // the releaser counts allocation per interval
			debug.FreeOSMemory()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			tick = true
		case <-collected:
			tick = false
		}
	}
}

// notifyGC sends on c after each garbage collection until ctx ends,
// dropping the signal if c is full. It watches an object that nothing
// references, whose cleanup runs once a collection has found it
// unreachable, and then watches a new one.
//
// Why: the runtime's heap goal under a memory limit keeps 1 MiB
// of headroom of its own and counts the heap's partly used spans and its
// free memory not yet returned against the limit, so on a small heap a few
// MB of new memory (50 clients connecting, every shard's first pages) put
// the process past the tight limit, and then each collection calls the
// next: 3 to 26 collections at a 1 MB heap goal as 50 clients began a fill
// at -P 1, with stop-the-world phases of up to 7 ms on a loaded host, and
// more bursts mid-fill, until the next tick raised the limit. Retuning
// after each collection left 3 at a 1 MB goal and no burst later: 10
// collections in each such 4 s fill, against 12 to 32.
func notifyGC(ctx context.Context, c chan<- struct{}) {
	var watch func()
	watch = func() {
		if ctx.Err() != nil {
			return
		}
		runtime.AddCleanup(new(gcSentinel), func(struct{}) {
			select {
			case c <- struct{}{}:
			default:
			}
			watch()
		}, struct{}{})
	}
	watch()
}

// gcSentinel is the object notifyGC watches: big enough that the
// allocator does not pack it with others into one block, which would keep
// it alive as long as they are.
type gcSentinel [16]byte

// heapSamples returns the runtime metrics readHeap reads.
func heapSamples() []metrics.Sample {
	names := []string{
		"/gc/heap/live:bytes",
		"/memory/classes/total:bytes",
		"/memory/classes/heap/released:bytes",
		"/memory/classes/heap/free:bytes",
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/heap/unused:bytes",
		"/gc/heap/allocs:bytes",
	}
	s := make([]metrics.Sample, len(names))
	for i, name := range names {
		s[i].Name = name
	}
	return s
}

// readHeap returns the live heap, the memory the runtime holds outside the
// heap (stacks, GC metadata, ...), and the bytes allocated since the start.
func readHeap(s []metrics.Sample) (live, overhead, allocs uint64) {
	metrics.Read(s)
	v := make([]uint64, len(s))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	heap := v[2] + v[3] + v[4] + v[5]
	return v[0], v[1] - min(v[1], heap), v[6]
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
