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
// no error may come later than a second after the survivors may serve the
// dead node's slots (failure detection, then the takeover's wait: 1.25
// lease terms, 2.5 s at these nodes' patient timing, 1.25 s at
// --cluster-timing lan), and the client must then decide every key; a
// leave may cause no error.

// failoverScript is a running client script and what it printed.
type failoverScript struct {
	stdin  io.WriteCloser
	lines  chan string
	done   chan error
	errs   []time.Time // when each failed request failed
	sample []string    // the first few errors' text
	last   []string    // the last few errors' text
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
	fs.waitLine(t, "ready", time.Time{})
	return fs
}

// waitLine waits for a line "prefix" or "prefix <unix ms>" stamped after
// after, and counts the errors it reads on the way.
func (fs *failoverScript) waitLine(t *testing.T, prefix string, after time.Time) {
	t.Helper()
	timeout := time.After(deadline)
	for {
		select {
		case l, ok := <-fs.lines:
			require.True(t, ok, "the script ended before printing %q", prefix)
			if fs.take(t, l) {
				continue
			}
			f := strings.Fields(l)
			if len(f) == 0 || f[0] != prefix {
				continue
			}
			if len(f) == 1 {
				return
			}
			ms, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err, l)
			if time.UnixMilli(ms).After(after) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q from the script within %v", prefix, deadline)
		}
	}
}

// take counts line if it reports an error.
func (fs *failoverScript) take(t *testing.T, line string) bool {
	f := strings.SplitN(line, " ", 3)
	if f[0] != "err" || len(f) < 3 {
		return false
	}
	ms, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err, line)
	fs.errs = append(fs.errs, time.UnixMilli(ms))
	if len(fs.sample) < 3 {
		fs.sample = append(fs.sample, f[2])
	}
	fs.last = append(fs.last[max(len(fs.last)-2, 0):], f[1]+" "+f[2])
	return true
}

// stop ends the script and returns how many requests it sent, the times
// of its errors and the first few errors' text.
func (fs *failoverScript) stop(t *testing.T) (sent int, errs []time.Time, sample []string) {
	t.Helper()
	_, err := io.WriteString(fs.stdin, "stop\n")
	require.NoError(t, err)
	for l := range fs.lines {
		if f := strings.Fields(l); !fs.take(t, l) && len(f) == 2 && f[0] == "done" {
			sent, _ = strconv.Atoi(f[1])
		}
	}
	require.NoError(t, <-fs.done)
	return sent, fs.errs, fs.sample
}

// runFailover runs script through node 1's death, or its leave. Each
// script prints "clean <unix ms>" whenever it has decided 300 keys in a
// row (every key once) without an error: after the window, one must come,
// so a client that stopped sending the dead node's keys fails too.
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
	window := time.Second + nodes[0].ml.Lease().TakeoverWait() + lag
	fs.waitLine(t, "clean", detected.Add(window))
	sent, errs, sample := fs.stop(t)
	t.Logf("%d decisions; the survivors saw 2 owners %v after; %d failed %v", sent, detected.Sub(at).Round(time.Millisecond), len(errs), sample)
	if leave {
		assert.Zero(t, len(errs), "errors while a node left gracefully")
		return
	}
	if len(errs) > 0 {
		last := errs[len(errs)-1]
		t.Logf("errors from %v to %v after the kill, the last %q", errs[0].Sub(at).Round(time.Millisecond), last.Sub(at).Round(time.Millisecond), fs.last)
		assert.LessOrEqual(t, last.Sub(detected), window, "the last error, %v after detection", last.Sub(detected))
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

func TestNodeRedisClusterAfterKill(t *testing.T) {
	runFailover(t, false, 0, needNode(t), "noderedis_failover.cjs")
}

func TestNodeRedisClusterAfterLeave(t *testing.T) {
	runFailover(t, true, 0, needNode(t), "noderedis_failover.cjs")
}

// redisPyLag is how much later than the reply that caused it redis-py
// 4.3.4 raises a ClusterDownError: RedisCluster tries a command
// cluster_error_retry_attempts times (5 in the script, as docs/clients.md
// says), and after each -CLUSTERDOWN it sleeps 0.25 s and reloads the
// slots before the next try, so the error the script stamps comes about
// 1.25 s after the last refusal.
const redisPyLag = 1250 * time.Millisecond
