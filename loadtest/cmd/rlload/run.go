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
)

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rlload run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf loadFlags
	lf.register(fs, "1")
	addr := fs.String("addr", "127.0.0.1:6379", "server address (loopback only)")
	test := fs.String("t", "rl.slide", "workload: "+fmt.Sprint(loadtest.Workloads()))
	tmpl := fs.String("cmd", "", `custom command template, e.g. "RL.SLIDE {key} 100 60" (overrides -t)`)
	rate := fs.Float64("rate", 0, "open loop: total requests per second (0: closed loop)")
	check := fs.Bool("check", false, "check the accuracy of windowed decisions")
	slack := fs.Duration("slack", 0, "clock uncertainty the accuracy check allows")
	prefix := fs.String("prefix", "", "key prefix (default: a fresh one per run)")
	cpuprofile := fs.String("cpuprofile", "", "write the load generator's CPU profile here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuprofile != "" {
		stopProfile, err := startProfile(*cpuprofile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	wl, err := pickWorkload(*test, *tmpl, lf.lim())
	if err != nil {
		return err
	}
	if *prefix == "" {
		*prefix = "lt:" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + ":"
	}
	depths, err := lf.depths()
	if err != nil || len(depths) != 1 {
		return fmt.Errorf("run takes one -P depth")
	}
	cfg := loadtest.Config{
		Addr: *addr, Workload: wl, Keys: lf.keys(*prefix),
		Conns: lf.conns, Pipeline: depths[0], Requests: lf.requests, Duration: lf.duration,
		Rate: *rate, Check: *check, Slack: *slack, Seed: lf.seed,
	}
	if !lf.quiet {
		cfg.Progress = stderr
	}
	return runAndReport(ctx, cfg, lf.jsonOut, stdout)
}

func pickWorkload(name, tmpl string, l loadtest.Limit) (loadtest.Workload, error) {
	if tmpl == "" {
		return loadtest.NewWorkload(name, l)
	}
	return loadtest.CustomWorkload(tmpl, nil)
}

func runAndReport(ctx context.Context, cfg loadtest.Config, asJSON bool, stdout io.Writer) error {
	cl, err := loadtest.Dial(ctx, cfg.Addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	before, merr := loadtest.TakeSnapshot(ctx, cl, 0)
	res, err := loadtest.Run(ctx, cfg)
	if after, aerr := loadtest.TakeSnapshot(ctx, cl, 0); merr == nil && aerr == nil {
		m := loadtest.Between(before, after)
		res.Memory = &m
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil {
			return jerr
		}
	} else {
		loadtest.WriteResult(stdout, res)
	}
	return err
}
