package httplimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/client/httplimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busy bounds each decision in the tests that are not about the timeout: a
// host loaded by -race and other packages' tests answers late, not never,
// and the 250 ms default made such answers 503s there.
const busy = 10 * time.Second

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })

func newClient(t *testing.T, addr string) *client.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return client.New(rdb)
}

func get(h http.Handler, remote string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestThreePerTen: 200, 200, 200, then 429 with the headers and a correct Retry-After.
func TestThreePerTen(t *testing.T) {
	l, err := httplimit.New(httplimit.Config{
		Client: newClient(t, startRlstore(t)), Name: "api", LegacyHeaders: true, Timeout: busy,
		Rule: client.Rule{Algorithm: "SLIDE", Limit: 3, Window: 10 * time.Second},
	})
	require.NoError(t, err)
	h := l.Handler(ok)
	for i := range 3 {
		w := get(h, "203.0.113.5:4000")
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Equal(t, `"api";q=3;w=10`, w.Header().Get("RateLimit-Policy"))
		assert.Regexp(t, `^"api";r=`+string(rune('2'-i))+`;t=(9|10)$`, w.Header().Get("RateLimit"))
		assert.Empty(t, w.Header().Get("Retry-After"))
	}
	for range 2 {
		w := get(h, "203.0.113.5:4000")
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		assert.Contains(t, []string{"9", "10"}, w.Header().Get("Retry-After"))
		assert.Regexp(t, `^"api";r=0;t=(9|10)$`, w.Header().Get("RateLimit"))
		assert.Equal(t, "0", w.Header().Get("X-RateLimit-Remaining"))
		assert.Equal(t, "3", w.Header().Get("X-RateLimit-Limit"))
		assert.Contains(t, w.Body.String(), "rate limit exceeded; retry after")
	}
	assert.Equal(t, http.StatusOK, get(h, "203.0.113.6:4000").Code, "another client has its own limit")
	assert.Equal(t, httplimit.Stats{Allowed: 4, Denied: 2}, l.Stats())
}

func TestPolicyCostJSON(t *testing.T) {
	c := newClient(t, startRlstore(t))
	require.NoError(t, c.PolicySet(context.Background(), "uploads", client.Policy{Rules: []client.Rule{{Algorithm: "FIXED", Limit: 10, Window: time.Hour}}}))
	l, err := httplimit.New(httplimit.Config{
		Client: c, Policy: "uploads", JSON: true, Timeout: busy,
		Key:  func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil },
		Cost: func(*http.Request) int64 { return 4 },
	})
	require.NoError(t, err)
	h := l.Handler(ok)
	assert.Equal(t, http.StatusOK, get(h, "192.0.2.1:1", "X-User", "u1").Code)
	assert.Equal(t, http.StatusOK, get(h, "192.0.2.2:1", "X-User", "u1").Code)
	w := get(h, "192.0.2.3:1", "X-User", "u1")
	require.Equal(t, http.StatusTooManyRequests, w.Code, "12 > 10")
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	assert.Equal(t, "rate limit exceeded", body["error"])
	assert.Greater(t, body["retry_after"], 0.0)
	assert.Equal(t, `"uploads";r=2;t=`, w.Header().Get("RateLimit")[:len(`"uploads";r=2;t=`)], "the denial charged nothing")
}

// syncBuf is a log sink the handler and the test can share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestFailOpenAndClosed(t *testing.T) {
	for _, open := range []bool{true, false} {
		var logs syncBuf
		l, err := httplimit.New(httplimit.Config{
			Client: newClient(t, deadAddr(t)), FailOpen: open,
			Rule:   client.Rule{Algorithm: "TOKEN", Limit: 1, Rate: 1, Window: time.Second},
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		require.NoError(t, err)
		h := l.Handler(ok)
		want := http.StatusServiceUnavailable
		if open {
			want = http.StatusOK
		}
		for range 3 {
			assert.Equal(t, want, get(h, "198.51.100.1:9").Code)
		}
		s := l.Stats()
		assert.True(t, s.Failing)
		if open {
			assert.Equal(t, uint64(3), s.FailedOpen)
			assert.Contains(t, logs.String(), "failing open")
		} else {
			assert.Equal(t, uint64(3), s.FailedClosed)
			assert.Contains(t, logs.String(), "failing closed")
		}
		assert.Equal(t, 1, bytes.Count([]byte(logs.String()), []byte("gave no decision")), "one line per outage, not per request")
		assert.Contains(t, l.Var().String(), `"failing":true`)
	}
}

func TestNewValidates(t *testing.T) {
	c := newClient(t, deadAddr(t))
	_, err := httplimit.New(httplimit.Config{Client: c})
	assert.Error(t, err)
	_, err = httplimit.New(httplimit.Config{Client: c, Policy: "p", Rule: client.Rule{Algorithm: "SLIDE"}})
	assert.Error(t, err)
	_, err = httplimit.New(httplimit.Config{Client: c, Rule: client.Rule{Algorithm: "NOPE"}})
	assert.Error(t, err)
	_, err = httplimit.New(httplimit.Config{Client: c, Policy: "p", TrustedProxies: []string{"not an ip"}})
	assert.Error(t, err)
}

// TestDefaultKeysPerLimiter: two limiters on one rlstore with the default key
// (the client's IP) used to share it: SLIDE on /login and TOKEN on /api made
// every /api call a WRONGTYPE, which FailOpen admitted. Each limiter's default
// keys now live under their own prefix.
func TestDefaultKeysPerLimiter(t *testing.T) {
	c := newClient(t, startRlstore(t))
	login, err := httplimit.New(httplimit.Config{Client: c, FailOpen: true, Timeout: busy,
		Rule: client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}})
	require.NoError(t, err)
	api, err := httplimit.New(httplimit.Config{Client: c, FailOpen: true, Timeout: busy,
		Rule: client.Rule{Algorithm: "TOKEN", Limit: 3, Rate: 1, Window: time.Minute}})
	require.NoError(t, err)
	same, err := httplimit.New(httplimit.Config{Client: c, FailOpen: true, Timeout: busy, Name: "signup",
		Rule: client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, get(login.Handler(ok), "203.0.113.9:1").Code)
	var got []int
	for range 5 {
		got = append(got, get(api.Handler(ok), "203.0.113.9:1").Code)
	}
	assert.Equal(t, []int{200, 200, 200, 429, 429}, got, "TOKEN 3 on /api, whatever /login holds")
	assert.Equal(t, uint64(0), api.Stats().FailedOpen)
	w := get(same.Handler(ok), "203.0.113.9:1")
	assert.Equal(t, `"signup";r=4;t=60`, w.Header().Get("RateLimit"), "a named limiter with the same rule counts apart")
}

// TestConfigErrorsNeverFailOpen: a WRONGTYPE or an argument error is a
// mistake in the configuration, not an outage: it answers 500 whatever
// FailOpen says, is counted apart and logged at ERROR.
func TestConfigErrorsNeverFailOpen(t *testing.T) {
	c := newClient(t, startRlstore(t))
	var logs syncBuf
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	slide, err := httplimit.New(httplimit.Config{Client: c, FailOpen: true, Timeout: busy, KeyPrefix: "shared:", Logger: logger,
		Rule: client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}})
	require.NoError(t, err)
	token, err := httplimit.New(httplimit.Config{Client: c, FailOpen: true, Timeout: busy, KeyPrefix: "shared:", Logger: logger,
		Rule: client.Rule{Algorithm: "TOKEN", Limit: 3, Rate: 1, Window: time.Minute}})
	require.NoError(t, err)
	badArgs, err := httplimit.New(httplimit.Config{Client: c, FailOpen: true, Timeout: busy, Logger: logger,
		Rule: client.Rule{Algorithm: "LOG", Limit: 5000, Window: time.Minute}})
	require.NoError(t, err)
	noPolicy, err := httplimit.New(httplimit.Config{Client: c, FailOpen: true, Timeout: busy, Logger: logger, Policy: "nope"})
	require.NoError(t, err)

	assert.Equal(t, http.StatusOK, get(slide.Handler(ok), "203.0.113.9:1").Code)
	for _, l := range []*httplimit.Limiter{token, badArgs, noPolicy} {
		for range 3 {
			assert.Equal(t, http.StatusInternalServerError, get(l.Handler(ok), "203.0.113.9:1").Code)
		}
		s := l.Stats()
		assert.Equal(t, uint64(3), s.Misconfigured)
		assert.Equal(t, uint64(0), s.FailedOpen, "never admitted as if rlstore were down")
	}
	out := logs.String()
	assert.Contains(t, out, "level=ERROR")
	assert.Contains(t, out, "WRONGTYPE")
	assert.Contains(t, out, "limit must be between 1 and 4000")
	assert.Contains(t, out, "no such policy")
	assert.NotContains(t, out, "gave no decision", "not logged as an outage")
}

// TestPolicyHeadersListEveryRule: with a Policy, RateLimit-Policy lists each
// rule's quota and RateLimit names the binding rule.
func TestPolicyHeadersListEveryRule(t *testing.T) {
	c := newClient(t, startRlstore(t))
	require.NoError(t, c.PolicySet(context.Background(), "api", client.Policy{Rules: []client.Rule{
		{Algorithm: "SLIDE", Limit: 100, Window: time.Minute},
		{Algorithm: "TOKEN", Limit: 10, Rate: 1, Window: time.Second},
	}}))
	l, err := httplimit.New(httplimit.Config{Client: c, Policy: "api", Timeout: busy})
	require.NoError(t, err)
	w := get(l.Handler(ok), "192.0.2.7:1")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, `"api-0";q=100;w=60, "api-1";q=10;w=10`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"api-1";r=9;t=1`, w.Header().Get("RateLimit"))
}
