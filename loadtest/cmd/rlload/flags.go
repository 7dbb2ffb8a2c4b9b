package main

import (
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/loadtest"
)

// loadFlags are the flags every command shares, named as redis-benchmark
// names them where it has a name.
type loadFlags struct {
	conns    int
	pipeline string
	requests int64
	keyspace uint64
	duration time.Duration
	dist     string
	zipfS    float64
	limit    int64
	window   time.Duration
	seed     uint64
	quiet    bool
	jsonOut  bool
	svgOut   string
}

func (f *loadFlags) register(fs *flag.FlagSet, pipelineDefault string) {
	fs.IntVar(&f.conns, "c", 50, "connections (clients)")
	fs.StringVar(&f.pipeline, "P", pipelineDefault, "pipeline depth; compare takes a list such as 1,16")
	fs.Int64Var(&f.requests, "n", 0, "stop after this many requests (0: duration only)")
	fs.Uint64Var(&f.keyspace, "r", 100000, "keyspace: number of distinct keys")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "stop after this long (0: request count only)")
	fs.StringVar(&f.dist, "dist", loadtest.DistUniform, "key distribution: uniform, zipf, hot or seq")
	fs.Float64Var(&f.zipfS, "zipf-s", 1.1, "zipf exponent (> 1)")
	fs.Int64Var(&f.limit, "limit", 1000, "the limit each key gets: limit units per window")
	fs.DurationVar(&f.window, "window", 60*time.Second, "the window (whole seconds)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for key choices")
	fs.BoolVar(&f.quiet, "q", false, "no progress line on stderr")
	fs.BoolVar(&f.jsonOut, "json", false, "print JSON instead of a table")
	fs.StringVar(&f.svgOut, "svg", "", "also write an SVG chart to this file")
}

func (f *loadFlags) lim() loadtest.Limit {
	return loadtest.Limit{Limit: f.limit, Window: f.window}
}

func (f *loadFlags) keys(prefix string) loadtest.KeySpec {
	return loadtest.KeySpec{Prefix: prefix, N: f.keyspace, Dist: f.dist, ZipfS: f.zipfS}
}

// depths parses the -P list.
func (f *loadFlags) depths() ([]int, error) {
	var out []int
	for _, s := range strings.Split(f.pipeline, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
