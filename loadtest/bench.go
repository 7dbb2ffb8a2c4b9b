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

// BenchConfig is the published benchmark's recipe. The rlload command
// holds the defaults.
type BenchConfig struct {
	Rlstore, Redis *proc.System
	Pairs          []report.Pair
	Conns          int
	Duration       time.Duration // per run
	Depths         []int         // the compare table's depths
	SweepDepths    []int         // the chart's depths
	Keyspace       uint64        // keys the throughput runs spread over
	Limit          Limit         // the throughput runs' limit per key
	MemKeys        uint64        // keys for memory per key
	Acc            AccuracyPlan
	Rounds         int           // runs per compare cell, alternating order; the median (of two, the better) is kept
	ProfileFor     time.Duration // how long perf samples rlstore; 0 for no profile
	Progress       io.Writer
}

// AccuracyPlan is the accuracy run: few keys and a tight limit, so that
// every key spends most of the run at its limit.
type AccuracyPlan struct {
	Keys     uint64
	Limit    Limit
	Conns    int
	Pipeline int
	Duration time.Duration
}

// AccRow is one accuracy run.
type AccRow struct {
	System   string         `json:"system"`
	Workload string         `json:"workload"`
	Result   *report.Result `json:"result"`
}

// BenchReport is everything the benchmark measured.
type BenchReport struct {
	Machine  proc.Machine    `json:"machine"`
	Config   BenchConfig     `json:"-"`
	Rows     []report.Row    `json:"rows"`
	Ceiling  []report.Row    `json:"ceiling"`
	Sweep    []report.Row    `json:"sweep"`
	Hot      []report.Row    `json:"hot"`
	Profile  []string        `json:"profile"`              // rlstore's hottest functions under the first pair at -P 16
	NoProf   string          `json:"no_profile,omitempty"` // why there is no profile
	Memory   []report.MemRow `json:"memory"`
	Accuracy []AccRow        `json:"accuracy"`
	Unserved []string        `json:"unserved"` // decision commands rlstore does not serve yet
	Started  time.Time       `json:"started"`
	Took     time.Duration   `json:"took_ns"`
}

// Bench runs the whole benchmark: the compare table, plain-Redis ceilings,
// the pipeline sweep for the chart, one hot key, a perf profile of rlstore,
// accuracy and memory per key.
func Bench(ctx context.Context, cfg BenchConfig, m proc.Machine) (*BenchReport, error) {
	rep := &BenchReport{Machine: m, Config: cfg, Started: time.Now()}
	steps := []func(context.Context, *BenchReport) error{benchCompare, benchCeiling, benchSweep, benchHot, benchProfile, benchAccuracy, benchMemory}
	for _, step := range steps {
		if err := step(ctx, rep); err != nil {
			return rep, err
		}
	}
	rep.Took = time.Since(rep.Started)
	return rep, nil
}

func (cfg BenchConfig) compare(pairs []report.Pair, depths []int) CompareConfig {
	return CompareConfig{
		Rlstore: cfg.Rlstore, Redis: cfg.Redis, Pairs: pairs, Depths: depths,
		Conns: cfg.Conns, Duration: cfg.Duration,
		Keys: KeySpec{N: cfg.Keyspace, Dist: DistUniform}, Limit: cfg.Limit,
		Rounds: cfg.Rounds, Progress: cfg.Progress,
	}
}

// benchCompare fills the main table with the commands rlstore serves and
// lists the others.
func benchCompare(ctx context.Context, rep *BenchReport) error {
	rows, err := Compare(ctx, rep.Config.compare(rep.Config.Pairs, rep.Config.Depths))
	for _, r := range rows {
		switch {
		case r.Rlstore != nil:
			rep.Rows = append(rep.Rows, r)
		case !slices.Contains(rep.Unserved, r.Native):
			rep.Unserved = append(rep.Unserved, r.Native)
		}
	}
	return err
}

// ceilingPairs are plain commands: what RESP costs with no decision at all.
func ceilingPairs() []report.Pair {
	return []report.Pair{{Native: "ping", Redis: "ping"}, {Native: "", Redis: "incr"}}
}

func benchCeiling(ctx context.Context, rep *BenchReport) error {
	var err error
	rep.Ceiling, err = Compare(ctx, rep.Config.compare(ceilingPairs(), rep.Config.Depths))
	return err
}

// benchSweep measures the chart's depths not already in the table.
func benchSweep(ctx context.Context, rep *BenchReport) error {
	var extra []int
	for _, d := range rep.Config.SweepDepths {
		if !slices.Contains(rep.Config.Depths, d) {
			extra = append(extra, d)
		}
	}
	pairs := []report.Pair{rep.Config.Pairs[0], {Native: "", Redis: "incr"}}
	var err error
	rep.Sweep, err = Compare(ctx, rep.Config.compare(pairs, extra))
	return err
}

// benchHot sends every request of the first pair to one key at -P 16: the
// worst case for a store that locks per key or per shard.
func benchHot(ctx context.Context, rep *BenchReport) error {
	cc := rep.Config.compare(rep.Config.Pairs[:1], []int{16})
	cc.Keys = KeySpec{N: 1, Dist: DistHot}
	var err error
	rep.Hot, err = Compare(ctx, cc)
	return err
}

// benchProfile samples rlstore with perf while it serves the first pair at
// -P 16, to show where its time goes.
func benchProfile(ctx context.Context, rep *BenchReport) error {
	cfg := rep.Config
	if cfg.ProfileFor <= 0 {
		rep.NoProf = "profiling was turned off"
		return nil
	}
	if !cfg.Rlstore.Owned() || !serves(ctx, cfg.Rlstore, cfg.Pairs[0].Native, cfg.Limit) {
		rep.NoProf = "rlstore was not started by rlload, or does not serve " + cfg.Pairs[0].Native
		return nil
	}
	run := cfg.compare(nil, nil).runConfig(16)
	run.Duration, run.Progress = cfg.ProfileFor+time.Second, nil
	done := make(chan error, 1)
	go func() {
		_, err := runOn(ctx, cfg.Rlstore, cfg.Pairs[0].Native, cfg.Limit, run)
		done <- err
	}()
	var err error
	if rep.Profile, err = proc.PerfProfile(ctx, cfg.Rlstore.PID(), cfg.ProfileFor, 20); err != nil {
		rep.NoProf = err.Error()
	}
	return <-done
}

// ChartSeries returns the chart's lines: the first pair on both systems and
// Redis INCR, over every depth measured.
func (rep *BenchReport) ChartSeries() []report.Series {
	first := rep.Config.Pairs[0]
	var native, lua, incr []*report.Result
	for _, r := range slices.Concat(rep.Rows, rep.Ceiling, rep.Sweep) {
		switch {
		case r.Native == first.Native && r.Native != "":
			native, lua = append(native, r.Rlstore), append(lua, r.RedisRes)
		case r.Native == "" && r.Redis == "incr":
			incr = append(incr, r.RedisRes)
		}
	}
	for _, rs := range [][]*report.Result{native, lua, incr} {
		slices.SortFunc(rs, func(a, b *report.Result) int { return depthOf(a) - depthOf(b) })
	}
	return []report.Series{
		report.SeriesFrom("rlstore "+first.Native, native),
		report.SeriesFrom("Redis+Lua "+first.Redis, lua),
		report.SeriesFrom("Redis INCR (no decision)", incr),
	}
}

func depthOf(r *report.Result) int {
	if r == nil {
		return 0
	}
	return r.Pipeline
}

func benchMemory(ctx context.Context, rep *BenchReport) error {
	cfg := rep.Config
	redis := map[string]*proc.Memory{} // scripts shared by two pairs are measured once
	for _, p := range cfg.Pairs {
		if !serves(ctx, cfg.Rlstore, p.Native, cfg.Limit) {
			continue
		}
		row := report.MemRow{Pair: p, Keys: cfg.MemKeys}
		var err error
		if row.Rlstore, err = MemoryPerKey(ctx, cfg.Rlstore, p.Native, MemLimit(), cfg.MemKeys, cfg.Progress); err != nil {
			return fmt.Errorf("loadtest: memory of %s: %w", p.Native, err)
		}
		if m, ok := redis[p.Redis]; ok {
			row.Redis = m
		} else if row.Redis, err = MemoryPerKey(ctx, cfg.Redis, p.Redis, MemLimit(), cfg.MemKeys, cfg.Progress); err != nil {
			return fmt.Errorf("loadtest: memory of %s: %w", p.Redis, err)
		}
		redis[p.Redis] = row.Redis
		if row.Rlstore != nil || row.Redis != nil {
			rep.Memory = append(rep.Memory, row)
		}
	}
	return nil
}

// benchAccuracy checks every windowed workload on both systems; Redis+Lua
// is the control, showing what the checker reports for a correct limiter.
func benchAccuracy(ctx context.Context, rep *BenchReport) error {
	cfg := rep.Config
	for _, p := range cfg.Pairs {
		if !serves(ctx, cfg.Rlstore, p.Native, cfg.Acc.Limit) {
			continue
		}
		for _, job := range []AccRow{{System: cfg.Rlstore.Name, Workload: p.Native}, {System: cfg.Redis.Name, Workload: p.Redis}} {
			if containsAcc(rep.Accuracy, job) {
				continue
			}
			sys := cfg.Redis
			if job.System == cfg.Rlstore.Name {
				sys = cfg.Rlstore
			}
			row, err := accuracyRun(ctx, cfg, sys, job.Workload)
			if err != nil {
				return err
			}
			if row != nil {
				rep.Accuracy = append(rep.Accuracy, *row)
			}
		}
	}
	return nil
}

func accuracyRun(ctx context.Context, cfg BenchConfig, sys *proc.System, name string) (*AccRow, error) {
	if name == "" {
		return nil, nil
	}
	wl, err := NewWorkload(name, cfg.Acc.Limit)
	if err != nil || wl.Rule == nil {
		return nil, err
	}
	a := cfg.Acc
	res, err := runOn(ctx, sys, name, a.Limit, Config{
		Keys:  KeySpec{Prefix: "acc:", N: a.Keys, Dist: DistUniform},
		Conns: a.Conns, Pipeline: a.Pipeline, Duration: a.Duration, Check: true, Progress: cfg.Progress, Seed: 1,
	})
	if err != nil || res == nil {
		return nil, err
	}
	return &AccRow{System: sys.Name, Workload: name, Result: res}, nil
}

func containsAcc(rows []AccRow, r AccRow) bool {
	return slices.ContainsFunc(rows, func(o AccRow) bool { return o.System == r.System && o.Workload == r.Workload })
}
