package server

import (
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/require"
)

// startServer runs a Server on 127.0.0.1:0 for the test's lifetime and returns
// it with its address. Fields of cfg left zero get test defaults.
func startServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	if cfg.Store == nil {
		m, err := shard.New(shard.Config{})
		require.NoError(t, err)
		cfg.Store = m
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := New(cfg)
	require.NoError(t, err)
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ready) }()
	select {
	case a := <-ready:
		t.Cleanup(func() { _ = s.Close(); <-done })
		return s, a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not start")
	}
	return nil, ""
}

// newClient returns a go-redis client for addr speaking protocol version proto (2 or 3).
func newClient(t *testing.T, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fakeClock is a settable clock for tests.
type fakeClock struct{ now time.Time }

func (f *fakeClock) Now() time.Time { return f.now }
