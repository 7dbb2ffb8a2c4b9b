package report

import (
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/hist"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
)

// Result is what a run measured.
type Result struct {
	Workload   string            `json:"workload"`
	Target     string            `json:"target"`
	Conns      int               `json:"conns"`
	Pipeline   int               `json:"pipeline"`
	Rate       float64           `json:"rate,omitempty"`
	Dist       string            `json:"dist"`
	Keyspace   uint64            `json:"keyspace"`
	Requests   int64             `json:"requests"`
	Allowed    int64             `json:"allowed"`
	Denied     int64             `json:"denied"`
	Errors     int64             `json:"errors"`
	FirstError string            `json:"first_error,omitempty"`
	RunError   string            `json:"run_error,omitempty"` // the run broke off: a connection failed, the server died
	Elapsed    time.Duration     `json:"elapsed_ns"`
	Throughput float64           `json:"throughput"`
	Latency    hist.Percentiles  `json:"latency"`
	SendLag    *hist.Percentiles `json:"send_lag,omitempty"`      // open loop: how late the client wrote requests; part of Latency
	ServerCPU  time.Duration     `json:"server_cpu_ns,omitempty"` // the server's CPU time over the run, when rlload started it
	ClientCPU  time.Duration     `json:"client_cpu_ns"`           // rlload's own CPU time over the run
	Memory     *proc.Memory      `json:"memory,omitempty"`
	Accuracy   *accuracy.Result  `json:"accuracy,omitempty"`
}

// CPUPerRequest returns the server's CPU time per request, 0 when unknown.
func (r *Result) CPUPerRequest() time.Duration {
	if r == nil || r.Requests == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Requests)
}
