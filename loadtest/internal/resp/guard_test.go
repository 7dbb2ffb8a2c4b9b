package resp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolveLoopbackAccepts(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:6379":        "127.0.0.1:6379",
		"127.255.0.9:1":         "127.255.0.9:1",
		"[::1]:6379":            "[::1]:6379",
		"[::ffff:127.0.0.1]:80": "127.0.0.1:80",
	} {
		got, err := ResolveLoopback(context.Background(), addr)
		require.NoError(t, err, addr)
		assert.Equal(t, want, got, addr)
	}
}

func TestResolveLoopbackAcceptsLocalhost(t *testing.T) {
	got, err := ResolveLoopback(context.Background(), "localhost:6379")
	require.NoError(t, err)
	assert.Contains(t, []string{"127.0.0.1:6379", "[::1]:6379"}, got)
}

func TestResolveLoopbackRefuses(t *testing.T) {
	for _, addr := range []string{
		"10.0.0.1:6379", "192.168.1.1:6379", "0.0.0.0:6379", "[::]:6379", "8.8.8.8:53",
		"[2001:db8::1]:6379", "[::ffff:10.0.0.1]:6379", ":6379", "128.0.0.1:6379",
	} {
		_, err := ResolveLoopback(context.Background(), addr)
		assert.ErrorIs(t, err, ErrNotLoopback, addr)
	}
}

func TestResolveLoopbackRejectsMalformed(t *testing.T) {
	// A host offline may wait on DNS for .invalid; the deadline keeps it short.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, addr := range []string{"127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:70000", "no-such-host.invalid:1"} {
		_, err := ResolveLoopback(ctx, addr)
		assert.Error(t, err, addr)
	}
}

func TestDialRefusesNonLoopbackWithoutConnecting(t *testing.T) {
	_, err := Dial(context.Background(), "192.0.2.1:6379")
	assert.ErrorIs(t, err, ErrNotLoopback)
}
