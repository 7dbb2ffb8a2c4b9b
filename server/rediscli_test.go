package server

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisCLI runs redis-cli against addr with args and returns its output. It
// skips the test where redis-cli is not installed (.ci/run installs it).
func redisCLI(t *testing.T, addr string, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed")
	}
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "redis-cli %v: %s", args, out)
	return string(out)
}

func TestRedisCLIConnection(t *testing.T) {
	_, addr := startServer(t, Config{Version: "4.5.6"})
	assert.Equal(t, "PONG\n", redisCLI(t, addr, "", "PING"))

	hello := redisCLI(t, addr, "", "-3", "HELLO", "3")
	assert.Contains(t, hello, "proto 3")
	assert.Contains(t, hello, "server redis")
	assert.Contains(t, hello, "rlstore_version 4.5.6")

	info := redisCLI(t, addr, "", "INFO")
	assert.Contains(t, info, "redis_version:7.0.0")
	assert.Contains(t, info, "# Keyspace")
	assert.Contains(t, redisCLI(t, addr, "", "-3", "CONFIG", "GET", "maxclients"), "maxclients 10000")
	assert.Equal(t, "10 5\n", redisCLI(t, addr, "", "ECHO", "10 5"))
}

func TestRedisCLIAuth(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "pw"})
	assert.Contains(t, redisCLI(t, addr, "", "PING"), "NOAUTH")
	assert.Equal(t, "PONG\n", redisCLI(t, addr, "", "--no-auth-warning", "-a", "pw", "PING"))
}

// TestRedisCLIPipe checks redis-cli --pipe, which ends its stream with an
// ECHO of a random marker and waits for it to come back.
func TestRedisCLIPipe(t *testing.T) {
	_, addr := startServer(t, Config{})
	var in strings.Builder
	for range 1000 {
		in.WriteString(respCmd("PING"))
	}
	out := redisCLI(t, addr, in.String(), "--pipe")
	assert.Contains(t, out, "errors: 0, replies: 1000")
}
