package gateway_test

import (
	"math"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlstore/rlstore/gateway"
)

const basicYAML = `
domain: api
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: path
    value: /login
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: path
    value: /static*
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: tenant
    descriptors:
      - key: plan
        value: gold
        rate_limit: {unit: day, requests_per_unit: 5}
      - key: plan
        rate_limit: {unit: day, requests_per_unit: 1}
  - key: internal
    rate_limit: {unlimited: true}
  - key: month
    rate_limit: {unit: MONTH, requests_per_unit: 10}
  - key: year
    rate_limit: {unit: year, requests_per_unit: 10}
`

// TestFixedWindow checks envoyproxy/ratelimit's fixed window: a count per
// epoch-aligned window, remaining after the hit, the window's rest as reset,
// and denied hits counted too.
func TestFixedWindow(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	r.clock.add(15 * time.Second)
	for i, want := range []uint32{2, 1, 0} {
		resp := r.ask(t, "api", 0, []string{"remote_address", "10.0.0.1"})
		require.Equal(t, []string{"OK", "OK"}, codesOf(resp), "hit %d", i+1)
		assert.Equal(t, []uint32{want}, remaining(resp), "hit %d", i+1)
		st := resp.Statuses[0]
		assert.Equal(t, uint32(3), st.CurrentLimit.RequestsPerUnit)
		assert.Equal(t, pb.RateLimitResponse_RateLimit_MINUTE, st.CurrentLimit.Unit)
		assert.Equal(t, int64(45), st.DurationUntilReset.Seconds, "reset at 15 s into the minute")
	}
	resp := r.ask(t, "api", 0, []string{"remote_address", "10.0.0.1"})
	assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp))
	assert.Equal(t, []uint32{0}, remaining(resp))
	other := r.ask(t, "api", 0, []string{"remote_address", "10.0.0.2"})
	assert.Equal(t, []uint32{2}, remaining(other), "each value has its own counter")
	r.clock.add(45 * time.Second) // the next minute
	resp = r.ask(t, "api", 0, []string{"remote_address", "10.0.0.1"})
	assert.Equal(t, []string{"OK", "OK"}, codesOf(resp))
	assert.Equal(t, []uint32{2}, remaining(resp))
	assert.Equal(t, int64(60), resp.Statuses[0].DurationUntilReset.Seconds)
}

// TestMatching checks value, key-only, wildcard and nested matching, and
// what matches nothing.
func TestMatching(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	cases := []struct {
		desc      []string
		wantLimit uint32 // 0: no limit
	}{
		{[]string{"path", "/login"}, 1},
		{[]string{"path", "/static/app.js"}, 2},
		{[]string{"path", "/static"}, 2},
		{[]string{"path", "/other"}, 0},
		{[]string{"tenant", "a", "plan", "gold"}, 5},
		{[]string{"tenant", "a", "plan", "free"}, 1},
		{[]string{"tenant", "a"}, 0},                                 // no limit at that level
		{[]string{"tenant", "a", "plan", "gold", "extra", "x"}, 0},   // deeper than the config
		{[]string{"remote_address", "1.2.3.4", "path", "/login"}, 0}, // remote_address has no children
		{[]string{"nokey", "v"}, 0},
	}
	for _, c := range cases {
		resp := r.ask(t, "api", 0, c.desc)
		assert.Equal(t, c.wantLimit, resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit(), "%q", c.desc)
		assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "%q", c.desc)
	}
}

// TestBadInput checks the answers to a request the reference refuses or passes.
func TestBadInput(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	_, err := r.call("", 0, []string{"a", "b"})
	assert.Equal(t, "rate limit domain must not be empty", status.Convert(err).Message())
	_, err = r.call("api", 0)
	assert.Equal(t, "rate limit descriptor list must not be empty", status.Convert(err).Message())
	resp := r.ask(t, "nosuch", 0, []string{"remote_address", "x"})
	assert.Equal(t, []string{"OK", "OK"}, codesOf(resp), "an unknown domain limits nothing")
	assert.Nil(t, resp.Statuses[0].CurrentLimit)
	resp = r.ask(t, "api", 0, []string{"", ""}, []string{"remote_address", ""})
	assert.Equal(t, []string{"OK", "OK", "OK"}, codesOf(resp), "empty keys and values")
	assert.Equal(t, uint32(3), resp.Statuses[1].GetCurrentLimit().GetRequestsPerUnit(), "an empty value still matches a key-only descriptor")

	empty := newRig(t, rigOpts{})
	_, err = empty.call("api", 0, []string{"a", "b"})
	assert.Equal(t, "no rate limit configuration loaded", status.Convert(err).Message())
	assert.Equal(t, codes.Unknown, status.Code(err))
}

// TestUnlimitedAndLongUnits checks unlimited, and MONTH as 30 days and YEAR as 365.
func TestUnlimitedAndLongUnits(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	resp := r.ask(t, "api", 0, []string{"internal", "x"})
	assert.Equal(t, uint32(math.MaxUint32), resp.Statuses[0].LimitRemaining)
	assert.Nil(t, resp.Statuses[0].CurrentLimit)
	now := t0.Unix()
	resp = r.ask(t, "api", 0, []string{"month", "x"}, []string{"year", "x"})
	assert.Equal(t, 30*86400-now%(30*86400), resp.Statuses[0].DurationUntilReset.Seconds)
	assert.Equal(t, 365*86400-now%(365*86400), resp.Statuses[1].DurationUntilReset.Seconds)
	// the count lasts the whole 30-day window
	r.clock.add(20 * 24 * time.Hour)
	if now%(30*86400)+20*86400 < 30*86400 {
		resp = r.ask(t, "api", 0, []string{"month", "x"})
		assert.Equal(t, []uint32{8}, remaining(resp))
	}
}

// TestHitsAddend checks the request's hits_addend (0 means 1), a
// descriptor's own (which wins), and 0 on a descriptor as a check only.
func TestHitsAddend(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	resp := r.ask(t, "api", 2, []string{"remote_address", "a"})
	assert.Equal(t, []uint32{1}, remaining(resp))
	req := &pb.RateLimitRequest{Domain: "api", HitsAddend: 5, Descriptors: []*pbstruct.RateLimitDescriptor{
		withHits(desc("remote_address", "a"), 0), // check only
		withHits(desc("remote_address", "b"), 1),
	}}
	resp, err := r.send(req)
	require.NoError(t, err)
	assert.Equal(t, []uint32{1, 2}, remaining(resp))
	resp = r.ask(t, "api", 2, []string{"remote_address", "a"}) // 2+2 = 4 > 3, counted anyway
	assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp))
	resp, err = r.send(&pb.RateLimitRequest{Domain: "api", Descriptors: []*pbstruct.RateLimitDescriptor{withHits(desc("remote_address", "a"), 0)}})
	require.NoError(t, err)
	assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp), "a check of a key over its limit")
}

const modesYAML = `
domain: modes
descriptors:
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: quota2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: per_user
    rate_limit: {unit: minute, requests_per_unit: 10, name: per_user}
  - key: vip
    rate_limit:
      unit: minute
      requests_per_unit: 1000
      replaces: [{name: per_user}]
  - key: native
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: fixed}
  - key: token
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: token}
`

// TestShadowQuotaReplaces checks shadow_mode per descriptor and global,
// quota_mode, and replaces.
func TestShadowQuotaReplaces(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"m.yaml": modesYAML}})
	r.ask(t, "modes", 0, []string{"shadow", "a"})
	resp := r.ask(t, "modes", 0, []string{"shadow", "a"})
	assert.Equal(t, []string{"OK", "OK"}, codesOf(resp), "shadow_mode lets it through")
	assert.Equal(t, []uint32{0}, remaining(resp))

	r.ask(t, "modes", 0, []string{"quota", "a"})
	resp = r.ask(t, "modes", 0, []string{"quota", "a"}, []string{"quota2", "a"})
	assert.Equal(t, []string{"OK", "OVER_LIMIT", "OK"}, codesOf(resp), "one quota of two is spent")
	resp = r.ask(t, "modes", 0, []string{"quota", "a"}, []string{"quota2", "a"})
	assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp), "every quota is spent")

	resp = r.ask(t, "modes", 0, []string{"per_user", "u"}, []string{"vip", "u"})
	require.Len(t, resp.Statuses, 2)
	assert.Nil(t, resp.Statuses[0].CurrentLimit, "per_user is replaced")
	assert.Equal(t, uint32(1000), resp.Statuses[1].CurrentLimit.RequestsPerUnit)

	gs := newRig(t, rigOpts{files: map[string]string{"m.yaml": modesYAML}, opts: globalShadow()})
	gs.ask(t, "modes", 0, []string{"per_user", "x"})
	for i := 0; i < 10; i++ {
		gs.ask(t, "modes", 0, []string{"per_user", "x"})
	}
	resp = gs.ask(t, "modes", 0, []string{"per_user", "x"})
	assert.Equal(t, []string{"OK", "OVER_LIMIT"}, codesOf(resp), "global shadow mode: the overall code only")
}

// TestAlgorithms checks rlstore's extension: with an algorithm, a denied
// request is not counted.
func TestAlgorithms(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"m.yaml": modesYAML}})
	r.ask(t, "modes", 0, []string{"native", "a"})
	r.ask(t, "modes", 0, []string{"native", "a"})
	for i := 0; i < 3; i++ {
		resp := r.ask(t, "modes", 0, []string{"native", "a"})
		assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp))
	}
	r.clock.add(time.Minute)
	resp := r.ask(t, "modes", 0, []string{"native", "a"})
	assert.Equal(t, []uint32{1}, remaining(resp))

	r.ask(t, "modes", 0, []string{"token", "a"})
	r.ask(t, "modes", 0, []string{"token", "a"})
	resp = r.ask(t, "modes", 0, []string{"token", "a"})
	assert.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, codesOf(resp))
	r.clock.add(500 * time.Millisecond) // one token back
	resp = r.ask(t, "modes", 0, []string{"token", "a"})
	assert.Equal(t, []string{"OK", "OK"}, codesOf(resp))
}

// TestResponseHeaders checks the RateLimit-* headers of the descriptor
// nearest its limit.
func TestResponseHeaders(t *testing.T) {
	opts := globalShadow()
	opts.GlobalShadowMode, opts.ResponseHeaders = false, true
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, opts: opts})
	r.clock.add(10 * time.Second)
	resp := r.ask(t, "api", 0, []string{"remote_address", "a"}, []string{"tenant", "t", "plan", "gold"})
	h := map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		h[hv.Key] = hv.Value
	}
	assert.Equal(t, map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": "2", "RateLimit-Reset": "50"}, h)
}

// TestStopIncrementWhenOverLimit checks envoyproxy/ratelimit's
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: a call that would take one of
// its descriptors over the limit counts its hits on that one only, so a
// client limited on /login keeps its per-address quota; the control
// without the option counts every descriptor on every call.
func TestStopIncrementWhenOverLimit(t *testing.T) {
	for _, stop := range []bool{true, false} {
		r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, opts: gateway.Options{StopIncrementWhenOverLimit: stop}})
		addr, login := []string{"remote_address", "10.0.0.1"}, []string{"path", "/login"}
		resp := r.ask(t, "api", 0, addr, login)
		require.Equal(t, []string{"OK", "OK", "OK"}, codesOf(resp))
		require.Equal(t, []uint32{2, 0}, remaining(resp))
		want := []uint32{2, 2} // the address's quota, after the second and third call
		if !stop {
			want = []uint32{1, 0}
		}
		for i, w := range want {
			resp = r.ask(t, "api", 0, addr, login)
			assert.Equal(t, []string{"OVER_LIMIT", "OK", "OVER_LIMIT"}, codesOf(resp), "stop %v, call %d", stop, i+2)
			assert.Equal(t, []uint32{w, 0}, remaining(resp), "stop %v, call %d", stop, i+2)
		}
		resp = r.ask(t, "api", 0, addr)
		assert.Equal(t, map[bool][]uint32{true: {1}, false: {0}}[stop], remaining(resp), "stop %v: a call under every limit counts", stop)
	}
}
