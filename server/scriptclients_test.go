package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The client libraries of other languages run as scripts in
// testdata/clients against a server started here. Node's come from the
// lockfile there (.ci/run runs npm ci), redis-py 4.3.4 from Debian's
// python3-redis. A test skips only when its runtime is missing, and fails
// instead when CI=true, where .ci/run installs everything.

// scriptLimit bounds each script; each takes about a second.
const scriptLimit = 2 * time.Minute

// debianPython is Debian's interpreter, which sees python3-redis; a pyenv
// python3 earlier on PATH would not.
const debianPython = "/usr/bin/python3"

func scriptsDir() string { return filepath.Join("testdata", "clients") }

// runtimeMissing skips the test, or fails it when CI=true.
func runtimeMissing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: not skipping)", why)
	}
	t.Skip(why)
}

// needNode returns node's path once it and the lockfile's packages are installed.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		runtimeMissing(t, "node is not installed")
	}
	if _, err := os.Stat(filepath.Join(scriptsDir(), "node_modules", "redis4")); err != nil {
		runtimeMissing(t, "server/testdata/clients has no node_modules: run npm ci there")
	}
	return node
}

// runScript runs a script against a fresh server and fails with its output if it fails.
func runScript(t *testing.T, name string, args ...string) {
	t.Helper()
	_, addr := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), scriptLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append(args, addr)...)
	cmd.Dir = scriptsDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s", out)
}

// TestNodeRedis4ScanEnds: node-redis 4 holds cursors as Numbers; SCAN over
// 10,000 keys must end with every key once.
func TestNodeRedis4ScanEnds(t *testing.T) { runScript(t, needNode(t), "scan4.mjs") }

// TestIoredisAndNodeRedis5Calls: ioredis 5 and 6 and node-redis 5 (RESP2, RESP3,
// RESP3 with client-side caching) call RL commands, pipelined and in MULTI.
func TestIoredisAndNodeRedis5Calls(t *testing.T) { runScript(t, needNode(t), "calls.mjs") }

// TestRedisPy434ClientInfo: redis-py 4.3.4 parses CLIENT INFO and CLIENT LIST.
func TestRedisPy434ClientInfo(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		runtimeMissing(t, debianPython+" is not installed")
	}
	if out, err := exec.Command(debianPython, "-c", "import redis").CombinedOutput(); err != nil {
		runtimeMissing(t, "python3-redis is not installed: "+strings.TrimSpace(string(out)))
	}
	runScript(t, debianPython, "client_info.py")
}
