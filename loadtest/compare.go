package loadtest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/rlstore/rlstore/loadtest/internal/report"
)

// DefaultPairs lists every rlstore decision command with its Lua
// counterpart. RL.CHECK runs a one-rule SLIDE policy, so it faces the
// sliding-window script; RL.TOKEN and CL.THROTTLE are both GCRA.
func DefaultPairs() []report.Pair {
	return []report.Pair{
		{Native: "rl.slide", Redis: "lua.slide"},
		{Native: "rl.token", Redis: "lua.gcra"},
		{Native: "rl.fixed", Redis: "lua.fixed"},
		{Native: "rl.log", Redis: "lua.log"},
		{Native: "rl.leaky", Redis: ""},
		{Native: "cl.throttle", Redis: "lua.gcra"},
		{Native: "rl.check", Redis: "lua.slide"},
	}
}

// CompareConfig is a side-by-side run: every pair at every depth, on both
// systems, alternating which goes first.
type CompareConfig struct {
	Rlstore, Redis *proc.System
	Pairs          []report.Pair
	Depths         []int
	Conns          int
	Duration       time.Duration
	Requests       int64
	Keys           KeySpec // Prefix is set per run
	Limit          Limit
	Rounds         int       // runs per cell; the median by throughput is kept
	Progress       io.Writer // nil for none
}

// Compare runs the comparison. A workload a system does not serve leaves
// its cell empty.
func Compare(ctx context.Context, cfg CompareConfig) ([]report.Row, error) {
	var rows []report.Row
	for _, p := range cfg.Pairs {
		for _, depth := range cfg.Depths {
			row := report.Row{Pair: p, Pipeline: depth}
			var err error
			if row.Rlstore, row.RedisRes, err = compareCell(ctx, cfg, p, depth); err != nil {
				return rows, err
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func compareCell(ctx context.Context, cfg CompareConfig, p report.Pair, depth int) (*report.Result, *report.Result, error) {
	if !serves(ctx, cfg.Rlstore, p.Native, cfg.Limit) {
		return nil, nil, nil // nothing to compare Redis with
	}
	var mine, theirs []report.Result
	for round := range max(cfg.Rounds, 1) {
		order := []bool{true, false}
		if round%2 == 1 {
			order = []bool{false, true}
		}
		for _, native := range order {
			sys, name, into := cfg.Redis, p.Redis, &theirs
			if native {
				sys, name, into = cfg.Rlstore, p.Native, &mine
			}
			res, err := runOrRecord(ctx, sys, name, cfg.Limit, cfg.runConfig(depth))
			if err != nil {
				return nil, nil, fmt.Errorf("loadtest: %s on %s at -P %d: %w", name, sys.Name, depth, err)
			}
			if res != nil {
				*into = append(*into, *res)
			}
		}
	}
	return median(mine), median(theirs), nil
}

func (cfg CompareConfig) runConfig(depth int) Config {
	return Config{
		Keys: cfg.Keys, Conns: cfg.Conns, Pipeline: depth,
		Requests: cfg.Requests, Duration: cfg.Duration, Progress: cfg.Progress, Seed: 1,
	}
}

// runOrRecord runs like RunOn, but a run that fails once under way becomes
// a result carrying the failure, and a server we started is restarted, so
// one crash shows in the table instead of ending the comparison.
func runOrRecord(ctx context.Context, sys *proc.System, name string, lim Limit, base Config) (*report.Result, error) {
	res, err := runOn(ctx, sys, name, lim, base)
	if err == nil || res == nil || ctx.Err() != nil {
		return res, err
	}
	res.RunError = err.Error()
	if sys.Owned() {
		if rerr := sys.Restart(ctx); rerr != nil {
			return nil, fmt.Errorf("%w (and restarting it failed: %v)", err, rerr)
		}
	}
	return res, nil
}

// runOn runs the named workload enforcing lim on sys with base's load
// shape, after emptying the server. It returns nil, nil when name is "" or
// the server does not know the command.
func runOn(ctx context.Context, sys *proc.System, name string, lim Limit, base Config) (*report.Result, error) {
	if name == "" {
		return nil, nil
	}
	wl, err := NewWorkload(name, lim)
	if err != nil {
		return nil, err
	}
	if !supported(ctx, sys.Addr(), wl) {
		return nil, nil
	}
	if err := sys.Flush(ctx); err != nil {
		return nil, err
	}
	base.Addr, base.Workload = sys.Addr(), wl
	if base.Progress != nil {
		fmt.Fprintf(base.Progress, "rlload: == %s on %s, %d conns × pipeline %d\n", name, sys.Name, base.Conns, base.Pipeline)
	}
	if base.Keys.Prefix == "" {
		base.Keys.Prefix = "b:"
	}
	cpu0, cerr := sys.CPU()
	res, err := Run(ctx, base)
	if cpu1, cerr1 := sys.CPU(); cerr == nil && cerr1 == nil {
		res.ServerCPU = cpu1 - cpu0
	}
	res.Target = sys.Name
	if err != nil && res.Requests == 0 && res.Conns == 0 {
		return nil, err // it never started
	}
	return &res, err
}

// serves reports whether sys serves the named workload; "" counts as
// served, so that a Redis-only ceiling row still runs.
func serves(ctx context.Context, sys *proc.System, name string, lim Limit) bool {
	if name == "" {
		return true
	}
	wl, err := NewWorkload(name, lim)
	return err == nil && supported(ctx, sys.Addr(), wl)
}

// median returns the result with the median throughput, nil for none.
func median(rs []report.Result) *report.Result {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b report.Result) int {
		switch {
		case a.Throughput < b.Throughput:
			return -1
		case a.Throughput > b.Throughput:
			return 1
		}
		return 0
	})
	return &rs[len(rs)/2]
}
