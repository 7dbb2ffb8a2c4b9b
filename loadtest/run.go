package loadtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/hist"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/rlstore/rlstore/loadtest/internal/report"
	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// ioGrace is how long past the run's deadline a stuck read or write may last
// before its connection is abandoned, so that every run ends by itself.
const ioGrace = 10 * time.Second

// Run sends cfg's workload and measures it. It runs the workload's setup
// commands first, dials every connection before the clock starts, and stops
// by itself once the request count or the duration is reached.
func Run(ctx context.Context, cfg Config) (report.Result, error) {
	if err := cfg.Validate(); err != nil {
		return report.Result{}, err
	}
	if err := setup(ctx, cfg); err != nil {
		return report.Result{}, err
	}
	workers, closeConns, err := newWorkers(ctx, &cfg)
	if err != nil {
		return report.Result{}, err
	}
	defer closeConns()
	cpu0 := proc.SelfCPU()
	elapsed, err := drive(ctx, cfg, workers)
	res := collect(cfg, workers, elapsed)
	res.ClientCPU = proc.SelfCPU() - cpu0
	return res, err
}

// setup sends the workload's setup commands once.
func setup(ctx context.Context, cfg Config) error {
	if len(cfg.Workload.Setup) == 0 {
		return nil
	}
	cl, err := resp.Dial(ctx, cfg.Addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, cmd := range cfg.Workload.Setup {
		if _, err := cl.DoOK(ctx, cmd...); err != nil {
			return fmt.Errorf("loadtest: setup for %s: %w", cfg.Workload.Name, err)
		}
	}
	return nil
}

// newWorkers dials every connection and makes a worker for each client.
func newWorkers(ctx context.Context, cfg *Config) ([]*worker, func(), error) {
	pickers := cfg.Keys.pickers(cfg.Conns, cfg.Seed)
	workers := make([]*worker, cfg.Conns)
	if cfg.Cluster {
		sm, err := readSlotMap(ctx, cfg.Addr)
		if err != nil {
			return nil, nil, err
		}
		routers, err := dialRouted(ctx, sm, cfg.Conns)
		if err != nil {
			return nil, nil, err
		}
		for i, r := range routers {
			workers[i] = newWorker(nil, cfg, pickers[i])
			workers[i].route = r
		}
		return workers, func() { closeRouters(routers) }, nil
	}
	clients, err := dialAll(ctx, cfg.Addr, cfg.Conns)
	if err != nil {
		return nil, nil, err
	}
	for i, cl := range clients {
		workers[i] = newWorker(cl, cfg, pickers[i])
	}
	return workers, func() { closeAll(clients) }, nil
}

func dialAll(ctx context.Context, addr string, n int) ([]*resp.Client, error) {
	clients := make([]*resp.Client, 0, n)
	for range n {
		cl, err := resp.Dial(ctx, addr)
		if err != nil {
			closeAll(clients)
			return nil, err
		}
		clients = append(clients, cl)
	}
	return clients, nil
}

func closeAll(clients []*resp.Client) {
	for _, cl := range clients {
		_ = cl.Close()
	}
}

// drive runs every worker to the end and returns the elapsed time and the
// first error.
func drive(ctx context.Context, cfg Config, workers []*worker) (time.Duration, error) {
	start := time.Now()
	b := newBudget(ctx, cfg.Requests, cfg.Duration, start)
	if cfg.Duration > 0 {
		for _, w := range workers {
			for _, cl := range w.conns() {
				_ = cl.SetDeadline(start.Add(cfg.Duration + ioGrace))
			}
		}
	}
	stopIO := context.AfterFunc(ctx, func() { closeAllWorkers(workers) })
	defer stopIO()
	stop := make(chan struct{})
	if cfg.Progress != nil {
		go progress(cfg.Progress, cfg.Workload.Name, workers, start, stop)
	}
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { errs[i] = runWorker(cfg, w, b, start, i) })
	}
	wg.Wait()
	close(stop)
	return time.Since(start), errors.Join(errs...)
}

func runWorker(cfg Config, w *worker, b *budget, start time.Time, i int) error {
	if cfg.Rate <= 0 {
		return w.runClosed(b)
	}
	interval := time.Duration(float64(cfg.Conns) / cfg.Rate * float64(time.Second))
	interval = max(interval, 1)
	offset := interval * time.Duration(i) / time.Duration(cfg.Conns)
	return w.runOpen(b, start.Add(offset), interval)
}

func closeAllWorkers(workers []*worker) {
	for _, w := range workers {
		for _, cl := range w.conns() {
			_ = cl.Close()
		}
	}
}

// collect sums the workers' measurements.
func collect(cfg Config, workers []*worker, elapsed time.Duration) report.Result {
	var h, lag hist.Histogram
	var t tally
	var events []accuracy.Event
	r := report.Result{
		Workload: cfg.Workload.Name, Target: cfg.Addr, Conns: cfg.Conns, Pipeline: cfg.Pipeline,
		Rate: cfg.Rate, Dist: cfg.Keys.Dist, Keyspace: cfg.Keys.N, Elapsed: elapsed,
	}
	for _, w := range workers {
		h.Merge(&w.hist)
		lag.Merge(&w.lag)
		t.merge(w.tally)
		events = append(events, w.events...)
		if r.FirstError == "" {
			r.FirstError = w.firstErr
		}
	}
	r.Requests, r.Allowed, r.Denied, r.Errors = t.requests, t.allowed, t.denied, t.errors
	r.Throughput = float64(t.requests) / elapsed.Seconds()
	r.Latency = h.Summary()
	if cfg.Rate > 0 {
		l := lag.Summary()
		r.SendLag = &l
	}
	if cfg.Check {
		acc := accuracy.Check(*cfg.Workload.Rule, events, cfg.Slack)
		r.Accuracy = &acc
	}
	return r
}
