package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Cluster-aware clients of other languages, against 3 in-process nodes.
// The scripts live in testdata/cluster-clients; ioredis and node-redis come from
// testdata/clients' lockfile (which .ci/run installs), redis-py 4.3.4 from
// Debian's python3-redis. They skip like the other script tests.

func runClusterScript(t *testing.T, name string, args ...string) {
	t.Helper()
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	for _, n := range nodes {
		args = append(args, n.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = filepath.Join("testdata", "cluster-clients")
	abs, err := filepath.Abs(filepath.Join(scriptsDir(), "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "NODE_PATH="+abs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s", out)
}

func TestIoredisCluster(t *testing.T) {
	runClusterScript(t, needNode(t), "ioredis_cluster.cjs")
}

func TestNodeRedisCluster(t *testing.T) {
	runClusterScript(t, needNode(t), "noderedis_cluster.cjs")
}

func TestRedisPyCluster(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		runtimeMissing(t, debianPython+" is not installed")
	}
	if out, err := exec.Command(debianPython, "-c", "import redis.cluster").CombinedOutput(); err != nil {
		runtimeMissing(t, "python3-redis is not installed: "+strings.TrimSpace(string(out)))
	}
	runClusterScript(t, debianPython, "redispy_cluster.py")
}
