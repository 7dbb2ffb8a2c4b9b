package gateway_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/rlstore/rlstore/gateway"
	"github.com/rlstore/rlstore/gateway/batch"
)

// countingDecider counts what the service asks the store.
type countingDecider struct {
	batch.Decider
	mu    sync.Mutex
	calls int
	keys  []string
}

func (c *countingDecider) Decide(ctx context.Context, reqs []batch.Request, out []batch.Result) error {
	c.mu.Lock()
	c.calls++
	for _, r := range reqs {
		c.keys = append(c.keys, string(r.Key))
	}
	c.mu.Unlock()
	return c.Decider.Decide(ctx, reqs, out)
}

func (c *countingDecider) asked() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, keys := c.calls, c.keys
	c.calls, c.keys = 0, nil
	return calls, keys
}

const cacheYAML = `
domain: api
descriptors:
  - key: ip
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: beta
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1, algorithm: fixed}
`

func cacheRig(t *testing.T, size int) (*rig, *countingDecider) {
	cd := &countingDecider{}
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": cacheYAML}, opts: gateway.Options{LocalCacheBytes: size},
		wrap: func(d batch.Decider) batch.Decider { cd.Decider = d; return cd }})
	return r, cd
}

// TestLocalCache checks the local over-limit cache: once a counting window
// is over its limit, the rest of its window is answered OVER_LIMIT (with
// the store's answer's fields) without asking the store; a new window, a
// raised limit and rlstore's own algorithms ask it again. The control
// without the cache asks every time.
func TestLocalCache(t *testing.T) {
	for _, size := range []int{1 << 20, 0} {
		r, cd := cacheRig(t, size)
		r.clock.add(20 * time.Second)
		ip := []string{"ip", "10.0.0.1"}
		for range 3 {
			r.ask(t, "api", 0, ip)
		}
		calls, _ := cd.asked()
		require.Equal(t, 3, calls, "size %d: the calls up to the first over the limit ask the store", size)
		for i := range 3 {
			resp := r.ask(t, "api", 0, ip)
			require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp), "size %d, call %d", size, i)
			assert.Equal(t, []uint32{0}, remaining(resp))
			assert.Equal(t, uint32(2), resp.Statuses[0].CurrentLimit.RequestsPerUnit)
			assert.Equal(t, int64(40), resp.Statuses[0].DurationUntilReset.Seconds)
		}
		calls, _ = cd.asked()
		want := map[int]int{1 << 20: 0, 0: 3}[size]
		assert.Equal(t, want, calls, "size %d: calls over the limit that ask the store", size)

		// A call with a known-over descriptor asks only for the others.
		resp := r.ask(t, "api", 0, ip, []string{"ip", "10.0.0.2"})
		assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT", "OK"}, codesOf(resp))
		calls, keys := cd.asked()
		if size > 0 {
			assert.Equal(t, 1, calls)
			require.Len(t, keys, 1)
			assert.Contains(t, keys[0], "10.0.0.2")
		}

		// shadow_mode: over, cached, and let through.
		beta := []string{"beta", "b"}
		r.ask(t, "api", 0, beta)
		r.ask(t, "api", 0, beta)
		cd.asked()
		resp = r.ask(t, "api", 0, beta)
		assert.Equal(t, []string{"OK", "OK"}, codesOf(resp), "size %d: shadow mode", size)
		calls, _ = cd.asked()
		assert.Equal(t, want/3, calls, "size %d: a shadow descriptor over its limit", size)

		// rlstore's algorithms never count a denied request: not cached.
		user := []string{"user", "u"}
		r.ask(t, "api", 0, user)
		for range 2 {
			resp = r.ask(t, "api", 0, user)
			assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp))
		}
		calls, _ = cd.asked()
		assert.Equal(t, 3, calls, "size %d: algorithm fixed always asks", size)

		var m bytes.Buffer
		r.svc.Stats.WriteMetrics(&m)
		cachedHits := map[int]string{1 << 20: "4", 0: "0"}[size] // three calls and one mixed call
		assert.Contains(t, m.String(), `rlstore_gateway_rate_limit_over_limit_with_local_cache_total{domain="api",descriptor="ip"} `+cachedHits)

		// The next window asks again.
		r.clock.add(40 * time.Second)
		resp = r.ask(t, "api", 0, ip)
		assert.Equal(t, []string{"OK", "OK"}, codesOf(resp), "size %d: a new window", size)
		assert.Equal(t, []uint32{1}, remaining(resp))
	}
}

// TestLocalCacheRaisedLimit checks that a limit raised by a reload within
// the window is decided by the store, not by the cache's stale entry.
func TestLocalCacheRaisedLimit(t *testing.T) {
	r, cd := cacheRig(t, 1<<20)
	ip := []string{"ip", "10.0.0.1"}
	for range 4 {
		r.ask(t, "api", 0, ip)
	}
	cd.asked()
	writeFile(t, filepath.Join(r.dir, "api.yaml"), strings.Replace(cacheYAML, "requests_per_unit: 2", "requests_per_unit: 10", 1))
	require.NoError(t, r.svc.Load(r.dir))
	resp := r.ask(t, "api", 0, ip)
	assert.Equal(t, []string{"OK", "OK"}, codesOf(resp))
	assert.Equal(t, []uint32{6}, remaining(resp), "the store counted the three calls up to the cache and this one, not the one the cache answered")
	calls, _ := cd.asked()
	assert.Equal(t, 1, calls)
}

// TestLocalCacheStopIncrement checks the two together as the reference
// does: a call with a descriptor over in the cache counts none of its
// others.
func TestLocalCacheStopIncrement(t *testing.T) {
	cd := &countingDecider{}
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": cacheYAML},
		opts: gateway.Options{LocalCacheBytes: 1 << 20, StopIncrementWhenOverLimit: true},
		wrap: func(d batch.Decider) batch.Decider { cd.Decider = d; return cd }})
	a, b := []string{"ip", "a"}, []string{"ip", "b"}
	for range 3 {
		r.ask(t, "api", 0, a)
	}
	cd.asked()
	resp := r.ask(t, "api", 0, a, b)
	assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT", "OK"}, codesOf(resp))
	assert.Equal(t, []uint32{0, 2}, remaining(resp), "b was only read")
	calls, _ := cd.asked()
	assert.Equal(t, 1, calls, "no read round before: the cache already knows")
	resp = r.ask(t, "api", 0, b)
	assert.Equal(t, []uint32{1}, remaining(resp))
}

const metadataYAML = `
domain: api
descriptors:
  - key: ip
    metadata: {team: edge, tier: {level: 1, tags: [a, b]}}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: path
    metadata: {team: web, tier: {zone: eu}, on: true, none: null}
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: free
    metadata: {team: free}
    rate_limit: {unlimited: true}
`

// TestDynamicMetadata checks RESPONSE_DYNAMIC_METADATA: the request, and
// the passing limits' metadata merged (the first value of a key wins,
// structs merge); an over-limit descriptor's is left out; and one call's
// merge does not change the next call's answer.
func TestDynamicMetadata(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": metadataYAML}, opts: gateway.Options{ResponseDynamicMetadata: true}})
	req := []string{"ip", "1"}
	want := `{"descriptors":[{"entries":["ip=1"]},{"entries":["path=/x"], "hitsAddend":2},{"entries":["free=f"]}],"domain":"api","hitsAddend":1,
		"metadata":{"team":"edge","tier":{"level":1,"tags":["a","b"],"zone":"eu"},"on":true,"none":null}}`
	for i := range 2 {
		call := desc(req...)
		resp, err := r.send(reqOf("api", 1, call, withHits(desc("path", "/x"), 2), desc("free", "f")))
		require.NoError(t, err)
		got, err := protojson.Marshal(resp.DynamicMetadata)
		require.NoError(t, err)
		if i == 0 {
			assert.JSONEq(t, want, string(got), "call %d", i)
			continue
		}
		// ip is over now: only path's metadata.
		assert.JSONEq(t, `{"descriptors":[{"entries":["ip=1"]},{"entries":["path=/x"], "hitsAddend":2},{"entries":["free=f"]}],"domain":"api","hitsAddend":1,
			"metadata":{"team":"web","tier":{"zone":"eu"},"on":true,"none":null}}`, string(got), "call %d", i)
	}
	resp := r.ask(t, "api", 0, []string{"nomatch", "x"})
	got, _ := protojson.Marshal(resp.DynamicMetadata)
	assert.JSONEq(t, `{"descriptors":[{"entries":["nomatch=x"]}],"domain":"api"}`, string(got))

	off := newRig(t, rigOpts{files: map[string]string{"api.yaml": metadataYAML}})
	assert.Nil(t, off.ask(t, "api", 0, req).DynamicMetadata, "off by default")
}

func reqOf(domain string, hits uint32, descs ...*pbstruct.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, HitsAddend: hits, Descriptors: descs}
}
