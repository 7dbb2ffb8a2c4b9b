package httplimit_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/client/httplimit"
	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWrongPasswordAtStartup: New fails with a wrong password (found at
// startup, not at the first request); a server that is down at New is an
// outage, logged, and New goes on; a password that stops working later
// answers 500, never fails open.
func TestWrongPasswordAtStartup(t *testing.T) {
	addr := rlstoretest.Start(t, rlstoreBin, nil, "--port", "0", "--requirepass", "sekret").Addr(t)
	rule := client.Rule{Algorithm: "SLIDE", Limit: 5, Window: time.Minute}
	const timeout = 10 * time.Second // a busy host's answer is late, not missing
	with := func(addr, password string) *client.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1,
			DialTimeout: time.Second, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rdb.Close() })
		return client.New(rdb)
	}

	_, err := httplimit.New(httplimit.Config{Client: with(addr, "wrong"), Rule: rule, FailOpen: true, Timeout: timeout})
	require.Error(t, err)
	assert.ErrorIs(t, err, client.ErrAuth)
	assert.Contains(t, err.Error(), "WRONGPASS")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := ln.Addr().String()
	require.NoError(t, ln.Close())
	var logs bytes.Buffer
	_, err = httplimit.New(httplimit.Config{Client: with(gone, ""), Rule: rule, FailOpen: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err, "an outage at start is not a configuration error")
	assert.Contains(t, logs.String(), "did not answer at start")

	c := with(addr, "sekret")
	l, err := httplimit.New(httplimit.Config{Client: c, Rule: rule, FailOpen: true, Timeout: timeout,
		Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})
	require.NoError(t, err)
	h := l.Handler(ok)
	require.Equal(t, http.StatusOK, get(h, "203.0.113.9:1").Code)
	admin := redis.NewClient(&redis.Options{Addr: addr, Password: "sekret"})
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	require.NoError(t, admin.ConfigSet(ctx, "requirepass", "rotated").Err())
	// The limiter's connections reconnect with the old password.
	require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "USER", "default", "SKIPME", "yes").Err())
	// A kill closes a connection from its own goroutine: until it has, the
	// pool may hand out the old one, whose reset is an outage, not a refusal.
	require.Eventually(t, func() bool {
		list, err := admin.ClientList(ctx).Result()
		return err == nil && strings.Count(strings.TrimSpace(list), "\n") == 0
	}, 10*time.Second, 10*time.Millisecond, "only the admin's connection is left")
	assert.Equal(t, http.StatusInternalServerError, get(h, "203.0.113.9:1").Code, "never fails open")
	assert.Equal(t, uint64(1), l.Stats().Misconfigured)
}
