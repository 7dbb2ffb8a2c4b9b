package httplimit_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/client/httplimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeciderAndHooks runs the middleware without a server: a Decider
// stands in for rlstore, and the hooks replace the default replies.
func TestDeciderAndHooks(t *testing.T) {
	var fail error
	dec := httplimit.DeciderFunc(func(_ context.Context, key string, cost int64) (client.Decision, error) {
		if fail != nil {
			return client.Decision{}, fail
		}
		allowed := key != "httplimit:t:203.0.113.1"
		return client.Decision{Allowed: allowed, Limit: 5, Wait: 3 * time.Second, Window: time.Minute, Rule: -1}, nil
	})
	var limited, errored int
	l, err := httplimit.New(httplimit.Config{Decider: dec, Name: "t",
		Skip: func(r *http.Request) bool { return r.Header.Get("X-Internal") == "1" },
		OnLimited: func(w http.ResponseWriter, _ *http.Request, d client.Decision) {
			limited++
			w.WriteHeader(http.StatusTeapot)
		},
		OnError: func(w http.ResponseWriter, _ *http.Request, err error) {
			errored++
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	require.NoError(t, err)
	h := l.Handler(ok)
	assert.Equal(t, http.StatusOK, get(h, "203.0.113.2:1").Code)
	w := get(h, "203.0.113.1:1")
	assert.Equal(t, http.StatusTeapot, w.Code)
	assert.Equal(t, "3", w.Header().Get("Retry-After"), "set before OnLimited")
	assert.Equal(t, `"t";q=5;w=60`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, http.StatusOK, get(h, "203.0.113.1:1", "X-Internal", "1").Code, "skipped")
	fail = errors.New("connection refused")
	assert.Equal(t, http.StatusBadGateway, get(h, "203.0.113.2:1").Code)
	fail = client.ErrWrongType
	assert.Equal(t, http.StatusBadGateway, get(h, "203.0.113.2:1").Code)
	assert.Equal(t, 1, limited)
	assert.Equal(t, 2, errored)
	assert.Equal(t, httplimit.Stats{Allowed: 1, Denied: 1, FailedClosed: 1, Misconfigured: 1, Failing: true}, l.Stats())

	_, err = httplimit.New(httplimit.Config{Decider: dec, Rule: client.Rule{Algorithm: "SLIDE"}})
	assert.Error(t, err, "Decider and a rule")
}

// stalled is a listener that accepts connections and never answers, like a
// SIGSTOPped rlstore.
func stalled(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	return ln.Addr().String()
}

// TestTimeoutStalledStore: a stalled rlstore costs each request the
// decision timeout, then the request is served as FailOpen says; a 503
// carries Retry-After.
func TestTimeoutStalledStore(t *testing.T) {
	addr := stalled(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: time.Minute, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, open := range []bool{false, true} {
		l, err := httplimit.New(httplimit.Config{Client: client.New(rdb), FailOpen: open, Timeout: 100 * time.Millisecond,
			Rule: client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}})
		require.NoError(t, err)
		done := make(chan int, 1)
		go func() { done <- get(l.Handler(ok), "203.0.113.3:1").Code }()
		select {
		case code := <-done:
			if open {
				assert.Equal(t, http.StatusOK, code)
			} else {
				assert.Equal(t, http.StatusServiceUnavailable, code)
			}
		case <-time.After(30 * time.Second): // far beyond 100 ms: the request is stuck, not slow
			t.Fatal("the request waited for the stalled store (ReadTimeout is a minute)")
		}
	}
	w := func() int {
		l, err := httplimit.New(httplimit.Config{Client: client.New(rdb), Timeout: 100 * time.Millisecond,
			Rule: client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}})
		require.NoError(t, err)
		r := get(l.Handler(ok), "203.0.113.3:1")
		assert.Equal(t, "1", r.Header().Get("Retry-After"))
		return r.Code
	}()
	assert.Equal(t, http.StatusServiceUnavailable, w)

	plain := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = plain.Close() })
	_, err := httplimit.New(httplimit.Config{Client: client.New(plain), Rule: client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}})
	assert.ErrorContains(t, err, "ContextTimeoutEnabled")
	_, err = httplimit.New(httplimit.Config{Client: client.New(plain), Timeout: -1, Rule: client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}})
	assert.NoError(t, err, "no timeout asked for")
}
