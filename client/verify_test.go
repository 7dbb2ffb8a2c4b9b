package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerifyCredentials: a wrong or missing password is ErrAuth, a
// configuration error, from Verify and from every call; a server that is
// not there is an outage, not ErrAuth.
func TestVerifyCredentials(t *testing.T) {
	addr := rlstoretest.Start(t, rlstoreBin, nil, "--port", "0", "--requirepass", "sekret").Addr(t)
	ctx := context.Background()
	with := func(password string) *client.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		return client.New(rdb)
	}
	require.NoError(t, with("sekret").Verify(ctx))
	for _, password := range []string{"wrong", ""} {
		c := with(password)
		err := c.Verify(ctx)
		assert.ErrorIs(t, err, client.ErrAuth, "password %q", password)
		assert.True(t, client.IsConfigError(err))
		_, err = c.Slide(ctx, "k", 1, time.Second)
		assert.ErrorIs(t, err, client.ErrAuth, "password %q: a decision", password)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := ln.Addr().String()
	require.NoError(t, ln.Close())
	rdb := redis.NewClient(&redis.Options{Addr: gone, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	err = client.New(rdb).Verify(ctx)
	require.Error(t, err)
	assert.False(t, client.IsConfigError(err), "an outage: %v", err)
}
