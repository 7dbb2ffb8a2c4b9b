package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/hist"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleResult() Result {
	return Result{
		Workload: "rl.slide", Target: "127.0.0.1:6379", Conns: 50, Pipeline: 16, Dist: "uniform", Keyspace: 100,
		Requests: 1000, Allowed: 900, Denied: 100, Elapsed: time.Second, Throughput: 1000,
		Latency:  hist.Percentiles{P50: 500 * time.Microsecond, P90: time.Millisecond, P99: 2 * time.Millisecond, P999: 3 * time.Millisecond, Max: 4 * time.Millisecond},
		Memory:   &proc.Memory{Source: "/proc VmRSS", Basis: "RSS", RSSBefore: 1 << 20, RSSAfter: 2 << 20, KeysAfter: 20000, BytesPerKey: 52.4},
		Accuracy: &accuracy.Result{Keys: 100, Admits: 900, Denials: 100, UnderChecked: true},
	}
}

func TestWriteResult(t *testing.T) {
	var b strings.Builder
	Write(&b, sampleResult())
	out := b.String()
	for _, want := range []string{"rl.slide on 127.0.0.1:6379", "50 conns × pipeline 16", "1.0k/s", "900 / 100",
		"p99 2ms", "52 B/key by RSS", "over-admission    0 units", "under-admission   0 denials"} {
		assert.Contains(t, out, want)
	}
}

func TestResultJSONRoundTrips(t *testing.T) {
	b, err := json.Marshal(sampleResult())
	require.NoError(t, err)
	var back Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sampleResult(), back)
	assert.Contains(t, string(b), `"p99_ns":2000000`)
}

func TestFormatting(t *testing.T) {
	assert.Equal(t, "512µs", Dur(512*time.Microsecond))
	assert.Equal(t, "1.5ms", Dur(1500*time.Microsecond))
	assert.Equal(t, "2s", Dur(2*time.Second))
	assert.Equal(t, "1.5KiB", Bytes(1536))
	assert.Equal(t, "1.20M", HumanCount(1.2e6))
	assert.Equal(t, "—", ratio(1, 0, true, true))
	assert.Equal(t, "2.00×", ratio(2, 1, true, true))
	assert.Equal(t, "500k", tickCount(5e5))
}

func TestCPUPerRequest(t *testing.T) {
	r := &Result{Requests: 1000, ServerCPU: time.Millisecond}
	assert.Equal(t, time.Microsecond, r.CPUPerRequest())
	assert.Zero(t, (*Result)(nil).CPUPerRequest())
}
