package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"time"
)

// rlstore runs Go code on GOMAXPROCS threads at once; Go's default, and
// --server-threads all, is every core the process may use. On a host where
// other processes keep some cores busy (the load generator of a benchmark,
// a sidecar, a second server), threads beyond the cores left free cost
// more CPU per request than they give: they preempt the other processes
// and each other, and the Go scheduler wakes and parks them more often.
// They still buy throughput, by taking cores from the others. On the
// 2-core development host, with the load generator on the same cores, one
// thread instead of two cut the server CPU per request by 2–10% and served
// 15–20% fewer requests (docs/performance.md, "Threads").
//
// With --server-threads auto, tuneThreads measures every threadsInterval
// how many cores the other processes kept busy, and runs on the cores
// left: never more than Go's default, never fewer than one. It moves only
// when the cores left differ from the threads by at least half a core, and
// it smooths what it measures (each interval weighs a third), so a
// one-interval blip does not flip it. A number fixes the threads instead,
// and an operator's GOMAXPROCS in the environment wins over auto.
const threadsInterval = time.Second

// threadsSetting is --server-threads: threadsAll, threadsAuto, or a number
// of threads.
type threadsSetting int

const (
	threadsAll  threadsSetting = 0
	threadsAuto threadsSetting = -1
)

func (t *threadsSetting) String() string {
	switch *t {
	case threadsAll:
		return "all"
	case threadsAuto:
		return "auto"
	}
	return strconv.Itoa(int(*t))
}

func (t *threadsSetting) Set(s string) error {
	switch s {
	case "all":
		*t = threadsAll
		return nil
	case "auto":
		*t = threadsAuto
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1024 {
		return fmt.Errorf("want all, auto or a number of threads from 1 to 1024, not %q", s)
	}
	*t = threadsSetting(n)
	return nil
}

// cpuSample is the host's CPU time and the process's own, at one moment.
type cpuSample struct {
	hostBusy, hostAll uint64        // ticks of /proc/stat's cpu line: busy, and busy or idle
	self              time.Duration // the process's user and system CPU time
	at                time.Time
}

// threadTuner picks the number of threads from successive samples.
type threadTuner struct {
	cores  float64 // the host's cores, busy or not
	most   int     // Go's default: never more threads than this
	cur    int     // threads now
	others float64 // cores other processes kept busy, smoothed; < 0 before the first measure
	last   cpuSample
}

func newThreadTuner(cores float64, most int, first cpuSample) *threadTuner {
	return &threadTuner{cores: cores, most: most, cur: most, others: -1, last: first}
}

// next returns the threads to run on, given a new sample.
func (t *threadTuner) next(s cpuSample) int {
	all, wall := s.hostAll-t.last.hostAll, s.at.Sub(t.last.at).Seconds()
	if all == 0 || wall <= 0 || s.hostAll < t.last.hostAll {
		t.last = s
		return t.cur
	}
	busy := float64(s.hostBusy-t.last.hostBusy) / float64(all) * t.cores
	self := (s.self - t.last.self).Seconds() / wall
	t.last = s
	others := max(busy-self, 0)
	if t.others < 0 {
		t.others = others
	} else {
		t.others = (2*t.others + others) / 3
	}
	free := t.cores - t.others
	if free >= float64(t.cur)+0.5 || free < float64(t.cur)-0.5 {
		t.cur = min(max(int(free+0.5), 1), t.most)
	}
	return t.cur
}

// startThreads applies --server-threads: a fixed number at once, or auto's
// tuning until ctx ends. It leaves GOMAXPROCS alone under all, and under
// auto if the operator set it in the environment or the host's CPU time
// cannot be read (no /proc/stat).
func startThreads(ctx context.Context, set threadsSetting, lookupEnv func(string) (string, bool), log *slog.Logger) {
	if set > 0 {
		runtime.GOMAXPROCS(int(set))
		return
	}
	if _, fixed := lookupEnv("GOMAXPROCS"); fixed || set == threadsAll {
		return
	}
	first, cores, err := readCPU()
	if err != nil {
		log.Debug("--server-threads auto: cannot measure the host's CPU time; keeping Go's default", "err", err)
		return
	}
	go tuneThreads(ctx, newThreadTuner(cores, runtime.GOMAXPROCS(0), first), log)
}

// tuneThreads sets GOMAXPROCS from a sample every threadsInterval until ctx ends.
func tuneThreads(ctx context.Context, t *threadTuner, log *slog.Logger) {
	tick := time.NewTicker(threadsInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, _, err := readCPU()
		if err != nil {
			continue
		}
		if n, was := t.next(s), runtime.GOMAXPROCS(0); n != was {
			runtime.GOMAXPROCS(n)
			log.Debug("server threads changed", "threads", n, "was", was, "cores_busy_elsewhere", fmt.Sprintf("%.2f", t.others))
		}
	}
}
