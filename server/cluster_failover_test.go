package server

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cluster-aware clients of other languages through a node's death (its
// gossip and listener closed at once, as kill -9 leaves them) and through a
// graceful leave, against 3 in-process nodes: each script sends decisions
// until told to stop and reports every error with its time. After a death
// no error may come later than a second after the survivors see it
// (failure detection plus 1 s); a leave may cause none.

// failoverScript is a running client script and the lines it printed.
type failoverScript struct {
	stdin io.WriteCloser
	lines chan string
	done  chan error
}

func startFailoverScript(t *testing.T, nodes []*testNode, name string, args ...string) *failoverScript {
	t.Helper()
	for _, n := range nodes {
		args = append(args, n.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptLimit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = filepath.Join("testdata", "cluster-clients")
	abs, err := filepath.Abs(filepath.Join(scriptsDir(), "node_modules"))
	require.NoError(t, err)
	cmd.Env = append(os.Environ(), "NODE_PATH="+abs)
	var stderr syncBuffer // redis-py prints the errors it retries
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's stderr:\n%s", name, stderr.Bytes())
		}
	})
	fs := &failoverScript{lines: make(chan string, 1<<16), done: make(chan error, 1)}
	fs.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fs.lines <- sc.Text()
		}
		close(fs.lines)
		fs.done <- cmd.Wait()
	}()
	fs.waitLine(t, "ready")
	return fs
}

// waitLine waits for a line starting with prefix, skipping errors.
func (fs *failoverScript) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(deadline)
	for {
		select {
		case l, ok := <-fs.lines:
			require.True(t, ok, "the script ended before printing %q", prefix)
			if strings.HasPrefix(l, prefix) {
				return l
			}
			require.True(t, strings.HasPrefix(l, "err "), "before %q: %s", prefix, l)
		case <-timeout:
			t.Fatalf("no %q from the script within %v", prefix, deadline)
		}
	}
}

// stop ends the script and returns the times of its errors and the first
// few errors' text.
func (fs *failoverScript) stop(t *testing.T) (sent int, errs []time.Time, sample []string) {
	t.Helper()
	_, err := io.WriteString(fs.stdin, "stop\n")
	require.NoError(t, err)
	for l := range fs.lines {
		f := strings.SplitN(l, " ", 3)
		switch f[0] {
		case "err":
			ms, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err, l)
			errs = append(errs, time.UnixMilli(ms))
			if len(sample) < 3 {
				sample = append(sample, f[2])
			}
		case "done":
			sent, _ = strconv.Atoi(f[1])
		}
	}
	require.NoError(t, <-fs.done)
	return sent, errs, sample
}

// runFailover runs script through node 1's death, or its leave.
func runFailover(t *testing.T, leave bool, lag time.Duration, name string, args ...string) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	fs := startFailoverScript(t, nodes, name, args...)
	at := time.Now()
	if leave {
		leaveGracefully(t, nodes[1])
	} else {
		nodes[1].ml.Kill()
		_ = nodes[1].srv.Close()
	}
	waitOwners(t, []*testNode{nodes[0], nodes[2]}, 2)
	detected := time.Now()
	require.Eventually(t, func() bool { return time.Since(detected) > 2*time.Second }, deadline, 10*time.Millisecond)
	sent, errs, sample := fs.stop(t)
	t.Logf("%d decisions; the survivors saw 2 owners %v after; %d failed %v", sent, detected.Sub(at).Round(time.Millisecond), len(errs), sample)
	if leave {
		assert.Zero(t, len(errs), "errors while a node left gracefully")
		return
	}
	if len(errs) > 0 {
		last := errs[len(errs)-1]
		t.Logf("errors from %v to %v after the kill", errs[0].Sub(at).Round(time.Millisecond), last.Sub(at).Round(time.Millisecond))
		assert.WithinDuration(t, detected, last, time.Second+takeoverWait+lag, "the last error, %v after detection", last.Sub(detected))
	}
}

// leaveGracefully leaves as cmd/rlstore's SIGTERM does: hand the slots
// over, tell the members, serve on until members and clients have moved
// away, then stop.
func leaveGracefully(t *testing.T, n *testNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, n.srv.HandOff(ctx))
	require.NoError(t, n.ml.Leaving(5*time.Second))
	n.srv.QuietHops(50*time.Millisecond, 250*time.Millisecond)
	n.srv.QuietClients(600*time.Millisecond, 3*time.Second)
	require.NoError(t, n.srv.Shutdown(ctx))
	require.NoError(t, n.ml.Close(time.Second))
}

func needRedisPy(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		runtimeMissing(t, debianPython+" is not installed")
	}
	if out, err := exec.Command(debianPython, "-c", "import redis.cluster").CombinedOutput(); err != nil {
		runtimeMissing(t, "python3-redis is not installed: "+strings.TrimSpace(string(out)))
	}
}

func TestRedisPyClusterAfterKill(t *testing.T) {
	needRedisPy(t)
	runFailover(t, false, redisPyLag, debianPython, "redispy_failover.py")
}

func TestRedisPyClusterAfterLeave(t *testing.T) {
	needRedisPy(t)
	runFailover(t, true, redisPyLag, debianPython, "redispy_failover.py")
}

func TestIoredisClusterAfterKill(t *testing.T) {
	runFailover(t, false, 0, needNode(t), "ioredis_failover.cjs")
}

func TestIoredisClusterAfterLeave(t *testing.T) {
	runFailover(t, true, 0, needNode(t), "ioredis_failover.cjs")
}

// takeoverWait is how long the survivors wait, after they declare a member
// dead, before they serve its slots (cluster.Lease.TakeoverWait: 1.25 lease
// terms of 1 s; docs/cluster.md, Safety). Clients can only find a new owner
// once it serves, so the error window is detection, this wait and 1 s.
const takeoverWait = 1250 * time.Millisecond

// redisPyLag is how much later than the reply that caused it redis-py
// 4.3.4 raises a ClusterDownError: RedisCluster tries a command three
// times (cluster_error_retry_attempts), and after each -CLUSTERDOWN it
// sleeps 0.25 s and reloads the slots before the next try, so the error
// the script stamps comes about 0.75 s after the last refusal.
const redisPyLag = 750 * time.Millisecond
