package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/loadtest"
	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/rlstore/rlstore/loadtest/internal/report"
	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// runFlags are the flags only `rlload run` takes.
type runFlags struct {
	load       loadFlags
	addr       string
	test       string
	tmpl       string
	rule       string
	cost       int64
	rate       float64
	check      bool
	slack      time.Duration
	prefix     string
	cpuprofile string
	cluster    bool
	split      bool
}

func (f *runFlags) register(fs *flag.FlagSet) {
	f.load.register(fs, "1")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:6379", "server address (loopback only)")
	fs.StringVar(&f.test, "t", "rl.slide", "workload: "+fmt.Sprint(loadtest.Workloads()))
	fs.StringVar(&f.tmpl, "cmd", "", `custom command template, e.g. "RL.SLIDE {key} 100 60" (overrides -t)`)
	fs.StringVar(&f.rule, "rule", "", "with --cmd: the rule --check holds it to: slide, fixed or log (of --limit per --window)")
	fs.Int64Var(&f.cost, "cost", 1, "with --cmd and --rule: the units each request charges (its COST)")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: total requests per second (0: closed loop)")
	fs.BoolVar(&f.check, "check", false, "check the accuracy of the decisions (windowed limits and token buckets)")
	fs.DurationVar(&f.slack, "slack", 0, "clock uncertainty the accuracy check allows")
	fs.StringVar(&f.prefix, "prefix", "", "key prefix (default: a fresh one per run)")
	fs.BoolVar(&f.cluster, "cluster", false, "act as a cluster-aware client: read the slot map from --addr and send each key to its owner (a connection per node for each of -c clients), each pipeline of -P keys to one node, as clients that batch per node do")
	fs.BoolVar(&f.split, "cluster-split", false, "with --cluster: split each pipeline of -P keys per node, as go-redis ClusterClient does, instead")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write the load generator's own CPU profile here")
}

func (f *runFlags) config() (loadtest.Config, error) {
	wl, err := f.workload()
	if err != nil {
		return loadtest.Config{}, err
	}
	if f.prefix == "" {
		f.prefix = "lt:" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + ":"
	}
	depths, err := f.load.depths()
	if err != nil || len(depths) != 1 {
		return loadtest.Config{}, fmt.Errorf("run takes one -P depth")
	}
	return loadtest.Config{
		Addr: f.addr, Workload: wl, Keys: f.load.keys(f.prefix),
		Conns: f.load.conns, Pipeline: depths[0], Requests: f.load.requests, Duration: f.load.duration,
		Rate: f.rate, Cluster: f.cluster, ClusterSplit: f.split, Check: f.check, Slack: f.slack, Seed: f.load.seed,
	}, nil
}

func (f *runFlags) workload() (loadtest.Workload, error) {
	if f.tmpl == "" {
		return loadtest.NewWorkload(f.test, f.load.lim())
	}
	var rule *accuracy.Rule
	if f.rule != "" {
		var err error
		if rule, err = loadtest.RuleFor(f.rule, f.load.lim()); err != nil {
			return loadtest.Workload{}, err
		}
		rule.Cost = f.cost
	}
	return loadtest.CustomWorkload(f.tmpl, rule)
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rlload run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.cpuprofile != "" {
		stopProfile, err := startProfile(f.cpuprofile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if !f.load.quiet {
		cfg.Progress = stderr
	}
	return runAndReport(ctx, cfg, f.load.jsonOut, stdout)
}

func runAndReport(ctx context.Context, cfg loadtest.Config, asJSON bool, stdout io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cl, err := resp.Dial(ctx, cfg.Addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	before, merr := proc.TakeSnapshot(ctx, cl, 0)
	res, err := loadtest.Run(ctx, cfg)
	if err != nil && res.Requests == 0 {
		return err // nothing was measured
	}
	if after, aerr := proc.TakeSnapshot(ctx, cl, 0); merr == nil && aerr == nil {
		m := proc.Between(before, after)
		res.Memory = &m
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
			return jerr
		}
	} else {
		report.Write(stdout, res)
	}
	return err
}
