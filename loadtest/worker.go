package loadtest

import (
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/hist"
	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// worker drives one connection. Everything in it belongs to its goroutine(s)
// except live, which the progress line reads.
type worker struct {
	cl    *resp.Client // nil for a cluster-aware worker, which has route
	route *router
	wl    *Workload
	tmpl  resp.Template
	keys  KeySpec
	pick  func() uint64
	depth int
	check bool
	split bool // a cluster-aware worker splits each pipeline per node (see router)

	hist     hist.Histogram
	lag      hist.Histogram // open loop: how late each request was written
	tally    tally
	events   []accuracy.Event
	firstErr string

	live struct{ requests, allowed, denied, errors atomic.Int64 }

	buf   []byte
	key   []byte
	batch []uint64
	rep   resp.Reply
}

func newWorker(cl *resp.Client, cfg *Config, pick func() uint64) *worker {
	return &worker{
		cl:    cl,
		wl:    &cfg.Workload,
		tmpl:  cfg.Workload.Template(),
		keys:  cfg.Keys,
		pick:  pick,
		depth: cfg.Pipeline,
		check: cfg.Check,
		split: cfg.ClusterSplit,
		batch: make([]uint64, cfg.Pipeline),
	}
}

// conns are the worker's connections.
func (w *worker) conns() []*resp.Client {
	if w.route != nil {
		return w.route.conns
	}
	return []*resp.Client{w.cl}
}

// encode appends one request for key number k to w.buf.
func (w *worker) encode(k uint64) {
	w.key = w.keys.AppendKey(w.key[:0], k)
	w.buf = w.tmpl.Append(w.buf, w.key)
}

// record accounts for one reply: latency counts from start, the accuracy
// trace from sent (the actual write) to now.
func (w *worker) record(k uint64, start, sent, now time.Time, o accuracy.Outcome) {
	w.hist.Record(now.Sub(start))
	w.tally.add(o)
	if o == accuracy.OutcomeError && w.firstErr == "" {
		w.firstErr = string(w.rep.Str)
	}
	if w.check {
		w.events = append(w.events, accuracy.Event{Key: k, Send: sent.UnixNano(), Recv: now.UnixNano(), Outcome: o})
	}
}

// lose records requests that got no reply, so that the accuracy check counts
// them as possibly admitted.
func (w *worker) lose(keys []uint64, sent time.Time) {
	if !w.check {
		return
	}
	for _, k := range keys {
		w.events = append(w.events, accuracy.Event{Key: k, Send: sent.UnixNano(), Recv: time.Now().UnixNano(), Outcome: accuracy.OutcomeUnknown})
	}
}

// publish makes the tally visible to the progress line.
func (w *worker) publish() {
	w.live.requests.Store(w.tally.requests)
	w.live.allowed.Store(w.tally.allowed)
	w.live.denied.Store(w.tally.denied)
	w.live.errors.Store(w.tally.errors)
}
