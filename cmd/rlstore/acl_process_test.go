package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessACLWithRedisCLI starts the binary with an --aclfile and logs
// in with redis-cli --user, as an operator would.
func TestProcessACLWithRedisCLI(t *testing.T) {
	cli := needTool(t, "redis-cli", "redis-tools")
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user default off\nuser api on >api-pw ~api:* +rl.slide +ping\n"), 0o600))
	p := startProc(t, nil, "--port", "0", "--aclfile", path)
	host, port, _ := net.SplitHostPort(p.Addr(t))
	run := func(args ...string) string {
		out, _ := exec.Command(cli, append([]string{"-h", host, "-p", port, "--no-auth-warning"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	assert.Contains(t, run("PING"), "NOAUTH")
	out := run("--user", "api", "--pass", "api-pw", "RL.SLIDE", "api:x", "5", "10")
	assert.True(t, strings.HasPrefix(out, "1\n5\n4\n0\n"), "allowed, limit 5, 4 left, no wait: %q", out)
	assert.Contains(t, run("--user", "api", "--pass", "api-pw", "RL.SLIDE", "web:x", "5", "10"), "NOPERM this user has no permissions to access one of the keys used as arguments")
	assert.Contains(t, run("--user", "api", "--pass", "api-pw", "FLUSHALL"), "NOPERM this user has no permissions to run the 'flushall' command")
	assert.Contains(t, run("--user", "api", "--pass", "wrong", "PING"), "WRONGPASS")
	assert.NotContains(t, p.Log.String(), "api-pw", "the password is never logged")
}
