package loadtest

import (
	"context"
	"io"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/proc"
)

// fillConns and fillDepth make a keyspace fill fast without being the
// measurement: only the memory it leaves behind counts.
const (
	fillConns = 8
	fillDepth = 64
	fillLimit = 10 * time.Minute // a stalled server still ends the run
)

// MemLimit is the limit memory fills use: an hour-long window and a slow
// refill, so that no key expires while the fill runs (a token bucket's
// state expires once it is full again, here after 6 minutes).
func MemLimit() Limit { return Limit{Limit: 10, Window: time.Hour} }

// MemoryPerKey measures what n keys of the named workload cost sys: it
// restarts sys (or, when sys is not ours, flushes it), runs the workload's
// setup, sends one request to each of n fresh keys and compares RSS and
// DBSIZE before and after. It returns nil, nil when name is "" or the server
// does not know the command.
func MemoryPerKey(ctx context.Context, sys *proc.System, name string, lim Limit, n uint64, progress io.Writer) (*proc.Memory, error) {
	if name == "" {
		return nil, nil
	}
	wl, err := NewWorkload(name, lim)
	if err != nil {
		return nil, err
	}
	if err := sys.Restart(ctx); err != nil {
		return nil, err
	}
	if !supported(ctx, sys.Addr(), wl) {
		return nil, nil
	}
	if err := sys.Flush(ctx); err != nil {
		return nil, err
	}
	return fill(ctx, sys, wl, n, progress)
}

func fill(ctx context.Context, sys *proc.System, wl Workload, n uint64, progress io.Writer) (*proc.Memory, error) {
	if err := setup(ctx, Config{Addr: sys.Addr(), Workload: wl}); err != nil {
		return nil, err
	}
	before, err := sys.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	cfg := Config{
		Addr: sys.Addr(), Workload: wl, Keys: KeySpec{Prefix: "m:", N: n, Dist: DistSeq},
		Conns: fillConns, Pipeline: fillDepth, Requests: int64(n), Duration: fillLimit, Progress: progress,
	}
	if _, err := Run(ctx, cfg); err != nil {
		return nil, err
	}
	after, err := sys.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	m := proc.Between(before, after)
	m.KeysSent = int64(n)
	return &m, nil
}
