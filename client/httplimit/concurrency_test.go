package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/client/httplimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrencyLimitsInFlight: two requests in flight fill a limit of 2;
// a third gets 429 with the concurrent-requests headers until one ends;
// every lease is given back after its request.
func TestConcurrencyLimitsInFlight(t *testing.T) {
	c := newClient(t, startRlstore(t))
	l, err := httplimit.NewConcurrency(httplimit.ConcurrencyConfig{Client: c, Limit: 2, Timeout: busy, Key: func(*http.Request) (string, error) { return "k", nil }})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		_, _ = w.Write([]byte("ok"))
	}))
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() { codes[i] = serve(h, "/slow").Code })
		<-entered
	}
	rec := serve(h, "/fast")
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, `"concurrent";q=2;qu="concurrent-requests"`, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"concurrent";r=0`, rec.Header().Get("RateLimit"))
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	release <- struct{}{}
	require.Eventually(t, func() bool { return serve(h, "/fast").Code == http.StatusOK }, 10*time.Second, 5*time.Millisecond)
	close(release)
	wg.Wait()
	assert.Equal(t, []int{200, 200}, codes)
	n, err := c.Redis().Exists(context.Background(), "httplimit:concurrent:k").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "every lease was released")
}

// TestConcurrencyRenewsWhileRunning: a handler that runs past the lease's
// TTL keeps its slot, renewed while it runs.
func TestConcurrencyRenewsWhileRunning(t *testing.T) {
	c := newClient(t, startRlstore(t))
	const ttl = time.Second
	l, err := httplimit.NewConcurrency(httplimit.ConcurrencyConfig{Client: c, Limit: 1, TTL: ttl, Timeout: busy, Key: func(*http.Request) (string, error) { return "k", nil }})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
	}))
	done := make(chan int)
	go func() { done <- serve(h, "/slow").Code }()
	<-entered
	start := time.Now()
	require.Eventually(t, func() bool { return time.Since(start) > 5*ttl/2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, http.StatusTooManyRequests, serve(h, "/fast").Code, "the slot is still held past its TTL")
	close(release)
	assert.Equal(t, http.StatusOK, <-done)
	assert.Equal(t, http.StatusOK, serve(h, "/fast").Code)
}

func serve(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}
