// Command rlsload drives a rate limit service (envoy.service.ratelimit.v3) over gRPC in a closed loop and reports calls per second, latency and the servers' CPU per decision.
//
// Its default client (-client h2) is a lean one of its own: raw HTTP/2
// (golang.org/x/net/http2's Framer and hpack), requests encoded from
// pre-encoded descriptors, many calls in flight on each of a few
// connections, one goroutine per connection, every answer decoded and
// checked. Its CPU per call is a fraction of grpc-go's client's, so that on
// a small host the rate measured is more the servers' and less the
// generator's, and it is the same for every server. -client grpc drives
// the service with grpc-go's client instead.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/hist"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
)

type config struct {
	addr        string
	client      string
	conns, c    int
	dur         time.Duration
	n           uint64 // most calls; 0: no bound but dur
	keys        int
	descriptors int
	domain, key string
	pids        string
	progress    time.Duration

	// record, when set (tests), gets each call of the h2 client: its
	// request message, its answer message, grpc-status and grpc-message.
	record func(req, answer []byte, status int, msg string)
}

// result is one run's numbers, printed as JSON.
type result struct {
	Client          string  `json:"client"`
	Calls           uint64  `json:"calls"`
	Errors          uint64  `json:"errors"`
	FirstError      string  `json:"first_error,omitempty"`
	OverLimit       uint64  `json:"over_limit"`
	CallsPerSec     float64 `json:"calls_per_sec"`
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	P50us           float64 `json:"p50_us"`
	P99us           float64 `json:"p99_us"`
	P999us          float64 `json:"p999_us"`
	ServerCPUus     float64 `json:"server_cpu_us_per_decision"` // the pids' CPU together
	ClientCPUus     float64 `json:"client_cpu_us_per_call"`
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8081", "the service's gRPC `host:port` (plain text)")
	flag.StringVar(&cfg.client, "client", "h2", "the client: h2 (rlsload's own) or grpc (grpc-go's)")
	flag.IntVar(&cfg.conns, "conns", 4, "connections")
	flag.IntVar(&cfg.c, "c", 50, "calls in flight in all (closed loop), spread over the connections")
	flag.DurationVar(&cfg.dur, "dur", 4*time.Second, "how long to run")
	flag.Uint64Var(&cfg.n, "n", 0, "stop after this many calls (0: only -dur bounds the run)")
	flag.IntVar(&cfg.keys, "keys", 100000, "distinct descriptor values, drawn uniformly")
	flag.IntVar(&cfg.descriptors, "descriptors", 1, "descriptors per call")
	flag.StringVar(&cfg.domain, "domain", "load", "the domain")
	flag.StringVar(&cfg.key, "key", "user", "the descriptor key")
	flag.StringVar(&cfg.pids, "pids", "", "comma-separated `pids` of the server processes whose CPU counts")
	flag.DurationVar(&cfg.progress, "progress", 0, "print a progress line to stderr this often (0: none)")
	cpuProfile := flag.String("cpuprofile", "", "write the generator's own CPU profile to this `file`")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "rlsload:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlsload:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

// tally is what a run's calls add up to.
type tally struct {
	calls, errs, over atomic.Uint64
	firstErr          atomic.Pointer[string]
}

func (t *tally) fail(why string) {
	t.errs.Add(1)
	t.firstErr.CompareAndSwap(nil, &why)
}

// stopper says when a run stops issuing calls: after dur, or n calls.
type stopper struct {
	deadline time.Time
	n        uint64
	issued   atomic.Uint64
	stopped  atomic.Bool
}

// next reports whether one more call may start.
func (s *stopper) next() bool {
	if s.stopped.Load() {
		return false
	}
	if (s.n > 0 && s.issued.Add(1) > s.n) || !time.Now().Before(s.deadline) {
		s.stopped.Store(true)
		return false
	}
	return true
}

func run(cfg config) (result, error) {
	if cfg.c < 1 || cfg.conns < 1 || cfg.descriptors < 1 || cfg.keys < 1 {
		return result{}, fmt.Errorf("-c, -conns, -descriptors and -keys must be at least 1")
	}
	pids, err := parsePids(cfg.pids)
	if err != nil {
		return result{}, err
	}
	var t tally
	stop := &stopper{n: cfg.n}
	var drive func() (*hist.Histogram, error)
	switch cfg.client {
	case "h2":
		g, err := newH2Gen(cfg, &t, stop)
		if err != nil {
			return result{}, err
		}
		drive = g.run
	case "grpc":
		g, err := newGRPCGen(cfg, &t, stop)
		if err != nil {
			return result{}, err
		}
		defer g.close()
		drive = g.run
	default:
		return result{}, fmt.Errorf("-client %q: h2 or grpc", cfg.client)
	}
	done := make(chan struct{})
	defer close(done)
	if cfg.progress > 0 {
		go progress(cfg.progress, &t, done)
	}
	cpu0, self0 := serverCPU(pids), proc.SelfCPU()
	start := time.Now()
	stop.deadline = start.Add(cfg.dur)
	h, err := drive()
	if err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	cpu, self := serverCPU(pids)-cpu0, proc.SelfCPU()-self0
	n := t.calls.Load()
	dec := float64(n) * float64(cfg.descriptors)
	res := result{
		Client: cfg.client, Calls: n, Errors: t.errs.Load(), OverLimit: t.over.Load(),
		CallsPerSec: float64(n) / elapsed.Seconds(), DecisionsPerSec: dec / elapsed.Seconds(),
		P50us: us(h.Quantile(0.5)), P99us: us(h.Quantile(0.99)), P999us: us(h.Quantile(0.999)),
		ServerCPUus: us(cpu) / max(dec, 1), ClientCPUus: us(self) / max(float64(n), 1),
	}
	if e := t.firstErr.Load(); e != nil {
		res.FirstError = *e
	}
	return res, nil
}

// progress prints the calls and errors so far, and the rate since the last line.
func progress(every time.Duration, t *tally, done <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	start, last, lastAt := time.Now(), uint64(0), time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			n := t.calls.Load()
			fmt.Fprintf(os.Stderr, "rlsload: %5.1fs %d calls, %.0f/s, %d errors\n",
				now.Sub(start).Seconds(), n, float64(n-last)/now.Sub(lastAt).Seconds(), t.errs.Load())
			last, lastAt = n, now
		}
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func parsePids(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("-pids: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// serverCPU is the pids' user and system CPU together.
func serverCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, p := range pids {
		c, err := proc.CPU(p)
		if err == nil {
			sum += c
		}
	}
	return sum
}
