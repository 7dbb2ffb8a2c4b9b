package gateway_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlstore/rlstore/gateway"
)

// The differential test: envoyproxy/ratelimit's answers to random traces,
// recorded by diff_record_test.go (build tag rlsrecord; see
// testdata/diff/README.md), are replayed here against rlstore, step by step
// at the recorded times, and compared field by field.

// diffConfig is the configuration both services run: fixed windows of
// several units, wildcards, nesting, shadow and quota modes, replaces,
// unlimited and a zero limit.
const diffConfig = `domain: diff
descriptors:
  - key: ip
    rate_limit: {unit: second, requests_per_unit: 4}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 6, name: user}
  - key: vip
    rate_limit:
      unit: minute
      requests_per_unit: 20
      replaces: [{name: user}]
  - key: path
    value: /api*
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: path
    value: /login
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: quota
    quota_mode: true
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: quota2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: free
    rate_limit: {unlimited: true}
  - key: tenant
    descriptors:
      - key: plan
        value: gold
        rate_limit: {unit: second, requests_per_unit: 5}
      - key: plan
        rate_limit: {unit: hour, requests_per_unit: 7}
  - key: zero
    rate_limit: {unit: second, requests_per_unit: 0}
`

// diffMetadataConfig is diffConfig with `metadata` on several limits, for
// the dynamic metadata. No two limits have a mapping under one key: the
// reference merges such mappings into its configuration's own values, so
// its later answers would show earlier calls' merges (docs/gateway.md).
var diffMetadataConfig = strings.NewReplacer(
	"  - key: ip\n", "  - key: ip\n    metadata: {team: edge, ip: {tier: 1, tags: [a, b]}}\n",
	"  - key: user\n", "  - key: user\n    metadata: {team: users, user: {plan: basic}, flag: true}\n",
	"  - key: vip\n", "  - key: vip\n    metadata: {team: vip, level: 2.5, vip: {on: yes, 1.50: x}}\n",
	"    value: /login\n", "    value: /login\n    metadata: {login: {shadow: true}, nothing: null}\n",
	"  - key: quota\n", "  - key: quota\n    metadata: {quota: {n: 1}}\n",
	"        value: gold\n", "        value: gold\n        metadata: {team: gold, gold: [1, {x: y}]}\n",
	"  - key: free\n", "  - key: free\n    metadata: {free: yes}\n",
).Replace(diffConfig)

// diffScenario is one way both services are run.
type diffScenario struct {
	Name   string
	Env    []string // envoyproxy/ratelimit's settings
	Opts   gateway.Options
	Config string // the configuration; diffConfig if empty
}

// config is the configuration the scenario runs.
func (sc diffScenario) config() string {
	if sc.Config == "" {
		return diffConfig
	}
	return sc.Config
}

func diffScenarios() []diffScenario {
	return []diffScenario{
		{Name: "default", Env: []string{"LIMIT_RESPONSE_HEADERS_ENABLED=true"}, Opts: gateway.Options{ResponseHeaders: true}},
		{Name: "global_shadow", Env: []string{"LIMIT_RESPONSE_HEADERS_ENABLED=true", "SHADOW_MODE=true"}, Opts: gateway.Options{ResponseHeaders: true, GlobalShadowMode: true}},
		{Name: "global_quota", Env: []string{"QUOTA_MODE=true"}, Opts: gateway.Options{GlobalQuotaMode: true}},
		{Name: "stop_increment", Env: []string{"LIMIT_RESPONSE_HEADERS_ENABLED=true", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"},
			Opts: gateway.Options{ResponseHeaders: true, StopIncrementWhenOverLimit: true}},
		// The local over-limit cache answers as the store would, but for
		// what it does not count: with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT
		// a call with a cached descriptor counts none, so the counts show it.
		{Name: "local_cache", Env: []string{"LIMIT_RESPONSE_HEADERS_ENABLED=true", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true", "LOCAL_CACHE_SIZE_IN_BYTES=1048576"},
			Opts: gateway.Options{ResponseHeaders: true, StopIncrementWhenOverLimit: true, LocalCacheBytes: 1 << 20}},
		{Name: "metadata", Env: []string{"RESPONSE_DYNAMIC_METADATA=true", "LOCAL_CACHE_SIZE_IN_BYTES=1048576"},
			Opts: gateway.Options{ResponseDynamicMetadata: true, LocalCacheBytes: 1 << 20}, Config: diffMetadataConfig},
	}
}

// diffStep is one recorded call.
type diffStep struct {
	At       int64           `json:"at"` // unix nanoseconds when it was sent
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// diffTrace is a recorded trace: the golden data.
type diffTrace struct {
	Reference string     `json:"reference"` // what answered: envoyproxy/ratelimit's commit, Redis's version
	Scenario  string     `json:"scenario"`
	Seed      uint64     `json:"seed"`
	Config    string     `json:"config"`
	Steps     []diffStep `json:"steps"`
}

// drawStep draws a trace's next request and the pause before it.
func drawStep(r *rand.Rand) (*pb.RateLimitRequest, time.Duration) {
	req := diffRequest(r)
	return req, time.Duration(r.IntN(40)) * time.Millisecond
}

// diffRequest draws a random request of the trace.
func diffRequest(r *rand.Rand) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: "diff"}
	if r.IntN(30) == 0 {
		req.Domain = "unknown"
	}
	if r.IntN(4) == 0 {
		req.HitsAddend = uint32(r.IntN(4))
	}
	n := 1 + r.IntN(3)
	for range n {
		d := diffDescriptor(r)
		if r.IntN(6) == 0 {
			d.HitsAddend = wrapperspb.UInt64(uint64(r.IntN(3)))
		}
		req.Descriptors = append(req.Descriptors, d)
	}
	return req
}

func diffDescriptor(r *rand.Rand) *pbstruct.RateLimitDescriptor {
	v := fmt.Sprint("v", r.IntN(3))
	e := func(kv ...string) *pbstruct.RateLimitDescriptor { return desc(kv...) }
	switch r.IntN(13) {
	case 0:
		return e("ip", v)
	case 1:
		return e("user", v)
	case 2:
		return e("vip", v)
	case 3:
		return e("path", []string{"/api/x", "/apix", "/login", "/other"}[r.IntN(4)])
	case 4:
		return e("quota", v)
	case 5:
		return e("quota2", v)
	case 6:
		return e("free", v)
	case 7:
		return e("tenant", v, "plan", []string{"gold", "silver"}[r.IntN(2)])
	case 8:
		return e("tenant", v)
	case 9:
		return e("zero", v)
	case 10:
		return e("nomatch", v)
	case 11:
		// One unit per value: envoyproxy/ratelimit's store key leaves the
		// unit out, so there one descriptor's SECOND and MINUTE limits share
		// a counter in the second a minute starts, which rlstore does not
		// reproduce (docs/gateway.md).
		i := r.IntN(3)
		d := e("ovr", fmt.Sprint("v", i))
		d.Limit = &pbstruct.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit(1 + i%2)}
		return d
	}
	return e("user", v, "extra", v) // deeper than the configuration
}

var diffMarshal = protojson.MarshalOptions{UseProtoNames: true}

// TestDifferential replays every recorded trace against rlstore.
func TestDifferential(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "diff", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded traces in testdata/diff")
	scenarios := map[string]diffScenario{}
	for _, sc := range diffScenarios() {
		scenarios[sc.Name] = sc
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var tr diffTrace
			require.NoError(t, json.Unmarshal(data, &tr))
			sc, ok := scenarios[tr.Scenario]
			require.True(t, ok, "scenario %q", tr.Scenario)
			replay(t, tr, sc)
		})
	}
}

func replay(t *testing.T, tr diffTrace, sc diffScenario) {
	require.Equal(t, sc.config(), tr.Config, "the trace was recorded with another configuration: record again")
	r := newRig(t, rigOpts{files: map[string]string{"diff.yaml": tr.Config}, opts: sc.Opts})
	draw := rand.New(rand.NewPCG(tr.Seed, 30))
	for i, st := range tr.Steps {
		r.clock.set(time.Unix(0, st.At))
		var req pb.RateLimitRequest
		require.NoError(t, protojson.Unmarshal(st.Request, &req))
		drawn, _ := drawStep(draw)
		require.True(t, proto.Equal(drawn, &req), "step %d: the trace's request is not the generator's: record again", i)
		got, err := r.send(&req)
		if st.Error != "" {
			require.Error(t, err, "step %d: %s", i, st.Request)
			assert.Equal(t, st.Error, status.Convert(err).Message(), "step %d", i)
			continue
		}
		require.NoError(t, err, "step %d: %s", i, st.Request)
		var want pb.RateLimitResponse
		require.NoError(t, protojson.Unmarshal(st.Response, &want))
		if !compareResponse(t, i, &want, got) {
			t.Fatalf("step %d at %s differs\nrequest %s\nwant %s\ngot  %s", i, time.Unix(0, st.At).UTC().Format(time.RFC3339Nano),
				st.Request, st.Response, diffMarshal.Format(got))
		}
	}
}

// compareResponse compares field by field: codes, limits and remaining
// exactly; durations until reset and the RateLimit-Reset header within a second.
func compareResponse(t *testing.T, i int, want, got *pb.RateLimitResponse) bool {
	ok := assert.Equal(t, want.OverallCode, got.OverallCode, "step %d: overall code", i)
	if !assert.Len(t, got.Statuses, len(want.Statuses), "step %d", i) {
		return false
	}
	for j, w := range want.Statuses {
		g := got.Statuses[j]
		ok = assert.Equal(t, w.Code, g.Code, "step %d status %d: code", i, j) && ok
		ok = assert.Equal(t, w.LimitRemaining, g.LimitRemaining, "step %d status %d: remaining", i, j) && ok
		ok = assert.Equal(t, w.GetCurrentLimit().GetRequestsPerUnit(), g.GetCurrentLimit().GetRequestsPerUnit(), "step %d status %d: limit", i, j) && ok
		ok = assert.Equal(t, w.GetCurrentLimit().GetUnit(), g.GetCurrentLimit().GetUnit(), "step %d status %d: unit", i, j) && ok
		ok = assert.Equal(t, w.GetCurrentLimit().GetName(), g.GetCurrentLimit().GetName(), "step %d status %d: name", i, j) && ok
		ok = assert.Equal(t, w.DurationUntilReset == nil, g.DurationUntilReset == nil, "step %d status %d: reset present", i, j) && ok
		ok = assert.InDelta(t, w.GetDurationUntilReset().AsDuration().Seconds(), g.GetDurationUntilReset().AsDuration().Seconds(), 1, "step %d status %d: reset", i, j) && ok
	}
	if !assert.Len(t, got.ResponseHeadersToAdd, len(want.ResponseHeadersToAdd), "step %d: headers", i) {
		return false
	}
	for j, w := range want.ResponseHeadersToAdd {
		g := got.ResponseHeadersToAdd[j]
		ok = assert.Equal(t, w.Key, g.Key, "step %d header %d", i, j) && ok
		if w.Key == "RateLimit-Reset" {
			var wv, gv int
			_, _ = fmt.Sscan(w.Value, &wv)
			_, _ = fmt.Sscan(g.Value, &gv)
			ok = assert.InDelta(t, wv, gv, 1, "step %d header %s", i, w.Key) && ok
			continue
		}
		ok = assert.Equal(t, w.Value, g.Value, "step %d header %s", i, w.Key) && ok
	}
	wm, gm := normalizeMetadata(want.DynamicMetadata), normalizeMetadata(got.DynamicMetadata)
	return assert.True(t, proto.Equal(wm, gm), "step %d: dynamic metadata\nwant %s\ngot  %s", i, protojson.Format(wm), protojson.Format(gm)) && ok
}

// normalizeMetadata collapses the spaces in each descriptor's "limit",
// protobuf's text of Envoy's override, which protobuf-go varies on purpose
// from one build to another.
func normalizeMetadata(m *structpb.Struct) *structpb.Struct {
	if m == nil {
		return nil
	}
	m = proto.Clone(m).(*structpb.Struct)
	for _, d := range m.GetFields()["descriptors"].GetListValue().GetValues() {
		if l, ok := d.GetStructValue().GetFields()["limit"]; ok {
			d.GetStructValue().Fields["limit"] = structpb.NewStringValue(strings.Join(strings.Fields(l.GetStringValue()), " "))
		}
	}
	return m
}
