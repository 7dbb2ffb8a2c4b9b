package loadtest

import (
	"time"
)

// Result is what a run measured.
type Result struct {
	Workload   string        `json:"workload"`
	Target     string        `json:"target"`
	Conns      int           `json:"conns"`
	Pipeline   int           `json:"pipeline"`
	Rate       float64       `json:"rate,omitempty"`
	Dist       string        `json:"dist"`
	Keyspace   uint64        `json:"keyspace"`
	Requests   int64         `json:"requests"`
	Allowed    int64         `json:"allowed"`
	Denied     int64         `json:"denied"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	RunError   string        `json:"run_error,omitempty"` // the run broke off: a connection failed, the server died
	Elapsed    time.Duration `json:"elapsed_ns"`
	Throughput float64       `json:"throughput"`
	Latency    Percentiles   `json:"latency"`
	SendLag    *Percentiles  `json:"send_lag,omitempty"`      // open loop: how late the client wrote requests; part of Latency
	ServerCPU  time.Duration `json:"server_cpu_ns,omitempty"` // the server's CPU time over the run, when rlload started it
	ClientCPU  time.Duration `json:"client_cpu_ns"`           // rlload's own CPU time over the run
	Memory     *Memory       `json:"memory,omitempty"`
	Accuracy   *Accuracy     `json:"accuracy,omitempty"`
}

// tally counts outcomes; workers keep one each and the run sums them.
type tally struct {
	requests, allowed, denied, errors int64
}

func (t *tally) add(o Outcome) {
	t.requests++
	switch o {
	case OutcomeAllowed:
		t.allowed++
	case OutcomeDenied:
		t.denied++
	case OutcomeError:
		t.errors++
	}
}

func (t *tally) merge(o tally) {
	t.requests += o.requests
	t.allowed += o.allowed
	t.denied += o.denied
	t.errors += o.errors
}

// CPUPerRequest returns the server's CPU time per request, 0 when unknown.
func (r *Result) CPUPerRequest() time.Duration {
	if r == nil || r.Requests == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Requests)
}
