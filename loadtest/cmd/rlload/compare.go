package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/rlstore/rlstore/loadtest"
	"github.com/rlstore/rlstore/loadtest/internal/report"
)

func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rlload compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf loadFlags
	var sf systemFlags
	lf.register(fs, "1,16")
	sf.register(fs)
	tests := fs.String("t", "", "rlstore workloads to compare, comma-separated (default: every decision command)")
	rounds := fs.Int("rounds", 1, "runs per cell, alternating which system goes first; the median is kept")
	memKeys := fs.Uint64("mem-keys", 100000, "keys for the bytes-per-key measurement (0: skip)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	depths, err := lf.depths()
	if err != nil {
		return err
	}
	pairs, err := choosePairs(*tests)
	if err != nil {
		return err
	}
	rl, redis, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer rl.Close()
	defer redis.Close()
	cfg := loadtest.CompareConfig{
		Rlstore: rl, Redis: redis, Pairs: pairs, Depths: depths, Conns: lf.conns,
		Duration: lf.duration, Requests: lf.requests, Keys: lf.keys(""), Limit: lf.lim(), Rounds: *rounds,
	}
	if !lf.quiet {
		cfg.Progress = stderr
	}
	rows, err := loadtest.Compare(ctx, cfg)
	if err != nil {
		return err
	}
	mem, err := memoryRows(ctx, cfg, *memKeys)
	if err != nil {
		return err
	}
	return reportCompare(stdout, lf, rows, mem)
}

// choosePairs picks the default pairs named in list, or all of them.
func choosePairs(list string) ([]report.Pair, error) {
	all := loadtest.DefaultPairs()
	if list == "" {
		return all, nil
	}
	var out []report.Pair
	for _, name := range splitList(list) {
		i := slices.IndexFunc(all, func(p report.Pair) bool { return p.Native == name })
		if i < 0 {
			return nil, fmt.Errorf("no comparison for %q", name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func memoryRows(ctx context.Context, cfg loadtest.CompareConfig, n uint64) ([]report.MemRow, error) {
	if n == 0 {
		return nil, nil
	}
	var rows []report.MemRow
	for _, p := range cfg.Pairs {
		row := report.MemRow{Pair: p, Keys: n}
		var err error
		if row.Rlstore, err = loadtest.MemoryPerKey(ctx, cfg.Rlstore, p.Native, loadtest.MemLimit(), n, nil); err != nil {
			return nil, err
		}
		if row.Redis, err = loadtest.MemoryPerKey(ctx, cfg.Redis, p.Redis, loadtest.MemLimit(), n, nil); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func reportCompare(stdout io.Writer, lf loadFlags, rows []report.Row, mem []report.MemRow) error {
	if lf.svgOut != "" {
		if err := writeChart(lf.svgOut, rows); err != nil {
			return err
		}
	}
	if lf.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Rows   []report.Row    `json:"rows"`
			Memory []report.MemRow `json:"memory"`
		}{rows, mem})
	}
	report.WriteCompare(stdout, rows, mem)
	return nil
}

// writeChart draws the first pair's rows on both systems.
func writeChart(path string, rows []report.Row) error {
	if len(rows) == 0 {
		return nil
	}
	first := rows[0].Pair
	var native, lua []*report.Result
	for _, r := range rows {
		if r.Pair == first {
			native, lua = append(native, r.Rlstore), append(lua, r.RedisRes)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	series := []report.Series{report.SeriesFrom("rlstore "+first.Native, native), report.SeriesFrom("Redis+Lua "+first.Redis, lua)}
	if err := report.WriteSVG(f, first.Native+" vs Redis+Lua "+first.Redis, series); err != nil {
		return err
	}
	return f.Close()
}
