package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rlstore/rlstore/loadtest"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/rlstore/rlstore/loadtest/internal/report"
)

// benchFlags are the published benchmark's knobs; the defaults are the
// published recipe.
type benchFlags struct {
	out, chart, jsonOut, notes, command string
	conns                               int
	duration                            time.Duration
	memKeys                             uint64
	accDuration                         time.Duration
	rounds                              int
	profileFor                          time.Duration
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "out", "BENCHMARKS.md", "write the Markdown report here")
	fs.StringVar(&f.chart, "chart", "loadtest/benchmarks.svg", "write the SVG chart here")
	fs.StringVar(&f.jsonOut, "json-out", "", "also write every measurement as JSON here")
	fs.StringVar(&f.notes, "notes", "", "append this Markdown file's analysis to the report")
	fs.StringVar(&f.command, "command", "bash loadtest/bench.sh", "the command named in the report as its source")
	fs.IntVar(&f.conns, "c", 50, "connections")
	fs.DurationVar(&f.duration, "duration", 2*time.Second, "length of each throughput run")
	fs.Uint64Var(&f.memKeys, "mem-keys", 1000000, "keys for memory per key")
	fs.DurationVar(&f.accDuration, "acc-duration", 5*time.Second, "length of each accuracy run")
	fs.DurationVar(&f.profileFor, "profile", 4*time.Second, "sample rlstore with perf this long, when perf is installed (0: no profile)")
	fs.IntVar(&f.rounds, "rounds", 2, "runs per compare cell, alternating which system goes first; the median is kept (the better of two)")
}

func (f *benchFlags) config(rl, redis *proc.System, progress io.Writer) loadtest.BenchConfig {
	return loadtest.BenchConfig{
		Rlstore: rl, Redis: redis, Pairs: loadtest.DefaultPairs(),
		Conns: f.conns, Duration: f.duration, Depths: []int{1, 16}, SweepDepths: []int{1, 4, 16, 64},
		Keyspace: 100000, Limit: loadtest.Limit{Limit: 100, Window: time.Minute}, MemKeys: f.memKeys,
		Acc: loadtest.AccuracyPlan{
			Keys: 20, Limit: loadtest.Limit{Limit: 100, Window: 2 * time.Second},
			Conns: f.conns, Pipeline: 4, Duration: f.accDuration,
		},
		Rounds: f.rounds, ProfileFor: f.profileFor, Progress: progress,
	}
}

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rlload bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var bf benchFlags
	var sf systemFlags
	bf.register(fs)
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	rl, redis, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer rl.Close()
	defer redis.Close()
	rep, err := loadtest.Bench(ctx, bf.config(rl, redis, stderr), proc.DescribeMachine(ctx, sf.redisBin))
	if err != nil {
		return err
	}
	return writeBench(rep, bf, stdout)
}

func writeBench(rep *loadtest.BenchReport, bf benchFlags, stdout io.Writer) error {
	var chart bytes.Buffer
	if err := report.WriteSVG(&chart, "RL.SLIDE vs Redis+Lua sliding window, 50 connections", rep.ChartSeries()); err != nil {
		return err
	}
	if err := os.WriteFile(bf.chart, chart.Bytes(), 0o644); err != nil {
		return err
	}
	notes, err := readNotes(bf.notes)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(bf.out), bf.chart)
	if err != nil {
		rel = bf.chart
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md, loadtest.MarkdownOptions{Command: bf.command, Chart: filepath.ToSlash(rel), Notes: notes})
	if err := os.WriteFile(bf.out, md.Bytes(), 0o644); err != nil {
		return err
	}
	if bf.jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(bf.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	_, err = stdout.Write(md.Bytes())
	return err
}

func readNotes(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", nil
	}
	return string(b), err
}
