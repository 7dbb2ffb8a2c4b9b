package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// node is a cluster process started from a fixed command line, as an
// operator or a supervisor starts it, so that it can be started again with
// exactly the same one.
type node struct {
	*clusterProc
	args []string
}

// fixedNodes returns the command lines of three nodes a, b and c on fixed
// loopback ports, as the README starts them: each joins the other two.
// seeds(i) says whether node i gets --join; each gets extra(i).
func fixedNodes(t *testing.T, seeds func(i int) bool, extra func(i int) []string) [][]string {
	t.Helper()
	gossip := make([]string, 3)
	for i := range gossip {
		gossip[i] = "127.0.0.1:" + stablePort(t)
	}
	args := make([][]string, 3)
	for i := range args {
		args[i] = []string{"--port", stablePort(t), "--node-name", string(rune('a' + i)),
			"--cluster-addr", gossip[i], "--cluster-timing", "fast"}
		if seeds(i) {
			args[i] = append(args[i], "--join", gossip[(i+1)%3]+","+gossip[(i+2)%3])
		}
		args[i] = append(args[i], extra(i)...)
	}
	return args
}

// startNode starts a node from its command line.
func startNode(t *testing.T, args []string) *node {
	t.Helper()
	p := startProc(t, nil, args...)
	gossip := p.WaitLog(t, gossipLine)[1]
	name := args[slicesIndex(args, "--node-name")+1]
	return &node{clusterProc: &clusterProc{proc: p, name: name, addr: p.Addr(t), gossip: gossip}, args: args}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// restart starts n again with its command line.
func (n *node) restart(t *testing.T) *node {
	t.Helper()
	return startNode(t, n.args)
}

func procsOf(ns []*node) []*clusterProc {
	ps := make([]*clusterProc, len(ns))
	for i, n := range ns {
		ps[i] = n.clusterProc
	}
	return ps
}

// knownNodes returns CLUSTER INFO's cluster_known_nodes of p, or "" on an error.
func knownNodes(p *clusterProc) string {
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	info, err := c.ClusterInfo(context.Background()).Result()
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`cluster_known_nodes:(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestRestartFirstNodeRejoins is the README's first node stopped with
// SIGTERM and started again with its original command line. It must
// rejoin b and c, not form a cluster of its own that serves every slot
// with fresh quotas: with the README's seeds (every node joins the two
// others), and with a data dir, which remembers the members, when it has
// no --join at all (the README before, and any node a supervisor restarts
// whose seeds are gone).
func TestRestartFirstNodeRejoins(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node restarts: not in -short")
	}
	t.Run("README seeds", func(t *testing.T) {
		restartFirst(t, fixedNodes(t, func(int) bool { return true }, func(int) []string { return nil }), syscall.SIGTERM)
	})
	t.Run("data dir, no join", func(t *testing.T) {
		restartFirst(t, fixedNodes(t, func(i int) bool { return i > 0 },
			func(int) []string { return []string{"--data-dir", t.TempDir()} }), syscall.SIGTERM)
	})
	t.Run("data dir, no join, kill -9", func(t *testing.T) {
		restartFirst(t, fixedNodes(t, func(i int) bool { return i > 0 },
			func(int) []string { return []string{"--data-dir", t.TempDir()} }), syscall.SIGKILL)
	})
}

func restartFirst(t *testing.T, args [][]string, sig syscall.Signal) {
	ns := []*node{startNode(t, args[0]), startNode(t, args[1]), startNode(t, args[2])}
	settleProcs(t, procsOf(ns)...)
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprint("first:", i))
	}
	q := newQuotaLoad(keys)
	for range handoffLimit / 2 {
		q.round(context.Background(), newClient(t, ns[1].addr))
	}
	if sig == syscall.SIGKILL {
		waitShippedOrNot(t, ns)
		ns[0].Kill()
	} else {
		ns[0].Signal(t, sig)
		require.Equal(t, 0, ns[0].ExitCode(t), "a stops cleanly")
		waitClusterSize(t, ns[1].clusterProc, 2)
	}
	ns[0] = ns[0].restart(t)
	settleProcs(t, procsOf(ns)...)
	assert.Equal(t, "3", knownNodes(ns[0].clusterProc), "a rejoined b and c")
	for range handoffLimit {
		q.round(context.Background(), newClient(t, ns[0].addr))
		q.round(context.Background(), newClient(t, ns[2].addr))
	}
	t.Logf("%d requests; %d admitted above the limit; %d errors", q.sent, q.over(), len(q.errs))
	assert.Zero(t, q.over(), "admissions above the limit: the restarted node served keys from a cluster of its own")
	assert.Empty(t, q.errs[:min(len(q.errs), 3)], "errors (the first three)")
	for _, k := range keys {
		assert.Equal(t, handoffLimit, q.admitted[k], "%s: at its limit", k)
	}
}

// waitShippedOrNot waits for the replicas to hold every key when the
// nodes ship them (the default, --replicas 1).
func waitShippedOrNot(t *testing.T, ns []*node) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range ns {
			if !settled(t, newClient(t, n.addr)) {
				return false
			}
		}
		return true
	}, deadline, 10*time.Millisecond)
}

// TestJoinWaitsForSeeds: a node whose seeds are not up yet serves no key
// alone (-CLUSTERDOWN, CLUSTER INFO cluster_state:fail) until one answers;
// then the two form the cluster. --cluster-bootstrap yes serves at once.
func TestJoinWaitsForSeeds(t *testing.T) {
	args := fixedNodes(t, func(int) bool { return true }, func(int) []string { return nil })
	a := startNode(t, args[0])
	ca := newClient(t, a.addr)
	_, err := ca.Do(context.Background(), "RL.SLIDE", "k", 3, 60).Result()
	require.Error(t, err)
	assert.Equal(t, "CLUSTERDOWN The cluster is down", err.Error(), "a keyed command on a node that has met no member")
	info, err := ca.ClusterInfo(context.Background()).Result()
	require.NoError(t, err)
	assert.Contains(t, info, "cluster_state:fail\r\n")
	assert.NoError(t, ca.Ping(context.Background()).Err(), "keyless commands are served")

	b := startNode(t, args[1])
	settleProcs(t, a.clusterProc, b.clusterProc)
	assert.Equal(t, []int64{1, 3, 2}, slide(t, ca, "k")[:3], "served once a has met b")

	boot := startNode(t, append(fixedNodes(t, func(int) bool { return true }, func(int) []string { return nil })[0],
		"--cluster-bootstrap", "yes"))
	assert.Equal(t, []int64{1, 3, 2}, slide(t, newClient(t, boot.addr), "k")[:3], "--cluster-bootstrap yes serves alone")
}

// loadStats counts, across a whole run, each key's admissions and the
// errors each kind of client saw.
type loadStats struct {
	mu       sync.Mutex // guards the fields below
	admitted map[string]int
	sent     int
	errs     map[string][]error // by client kind
}

func (s *loadStats) record(kind, key string, rep []int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	switch {
	case err != nil:
		s.errs[kind] = append(s.errs[kind], err)
	case rep[0] == 1:
		s.admitted[key]++
	}
}

func (s *loadStats) sentNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// waitSent waits until st has sent n requests.
func waitSent(t *testing.T, st *loadStats, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return st.sentNow() >= n }, deadline, 10*time.Millisecond, "%d requests sent", n)
}

// over returns the admissions above limit, and on how many keys.
func (s *loadStats) over(limit int) (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, keys := 0, 0
	for _, a := range s.admitted {
		if a > limit {
			n += a - limit
			keys++
		}
	}
	return n, keys
}

// errSummary counts errors by their first word or two.
func errSummary(errs []error) map[string]int {
	out := map[string]int{}
	for _, err := range errs {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "connection refused"):
			msg = "connection refused"
		case strings.Contains(msg, "connection reset"), errors.Is(err, syscall.ECONNRESET):
			msg = "connection reset"
		case strings.Contains(msg, "EOF"):
			msg = "EOF"
		default:
			if f := strings.Fields(msg); len(f) > 2 {
				msg = strings.Join(f[:2], " ")
			}
		}
		out[msg]++
	}
	return out
}

// paced sends RL.SLIDE for keys in turn through do, every period, until
// stop is closed.
func paced(wg *sync.WaitGroup, stop <-chan struct{}, period time.Duration, keys []string, limit int,
	do func(ctx context.Context, key string) ([]int64, error), record func(key string, rep []int64, err error)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			k := keys[i%len(keys)]
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			rep, err := do(ctx, k)
			cancel()
			record(k, rep, err)
		}
	}()
}

// TestQuickRestartUnderLoad is a kill -9 of one node of three and its
// immediate restart with the same command line (data dir, replicas), as a
// supervisor restarts it, while a go-redis ClusterClient and plain
// clients on every node decide keys at a steady pace. Admissions are
// counted per key across the whole run.
func TestQuickRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node kill -9 and restart under load: not in -short")
	}
	t.Run("first node", func(t *testing.T) { quickRestartUnderLoad(t, 0) })
	t.Run("another node", func(t *testing.T) { quickRestartUnderLoad(t, 1) })
}

// quickLimit is each key's limit an hour in quickRestartUnderLoad.
const quickLimit = 30

func quickRestartUnderLoad(t *testing.T, victim int) {
	args := fixedNodes(t, func(int) bool { return true },
		func(int) []string { return []string{"--data-dir", t.TempDir(), "--replica-interval", replicaIv.String()} })
	ns := []*node{startNode(t, args[0]), startNode(t, args[1]), startNode(t, args[2])}
	settleProcs(t, procsOf(ns)...)
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprint("quick:", i))
	}
	st := &loadStats{admitted: map[string]int{}, errs: map[string][]error{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{ns[0].addr, ns[1].addr, ns[2].addr}})
	t.Cleanup(func() { _ = cc.Close() })
	slideVia := func(c interface {
		Do(context.Context, ...any) *redis.Cmd
	}) func(ctx context.Context, key string) ([]int64, error) {
		return func(ctx context.Context, key string) ([]int64, error) {
			return c.Do(ctx, "RL.SLIDE", key, quickLimit, 3600).Int64Slice()
		}
	}
	recordAs := func(kind string) func(string, []int64, error) {
		return func(k string, rep []int64, err error) { st.record(kind, k, rep, err) }
	}
	for range 2 {
		paced(&wg, stop, 10*time.Millisecond, keys, quickLimit, slideVia(cc), recordAs("cluster client"))
	}
	for i, n := range ns {
		kind := "plain, other node"
		if i == victim {
			kind = "plain, restarted node"
		}
		paced(&wg, stop, 10*time.Millisecond, keys, quickLimit, slideVia(newClient(t, n.addr)), recordAs(kind))
	}
	waitSent(t, st, len(keys)*quickLimit/3) // about a third of each key's limit used
	ns[victim].Kill()
	ns[victim] = ns[victim].restart(t)
	settleProcs(t, procsOf(ns)...)
	from := st.sentNow()
	waitSent(t, st, from+2*len(keys)*quickLimit) // every key well past its limit
	close(stop)
	wg.Wait()

	n, k := st.over(quickLimit)
	t.Logf("%d requests; %d admitted above the limit on %d keys; errors: cluster client %v, plain on the restarted node %v, plain on the others %v",
		st.sent, n, k, errSummary(st.errs["cluster client"]), errSummary(st.errs["plain, restarted node"]), errSummary(st.errs["plain, other node"]))
	assert.Zero(t, n, "admissions above the limit")
	assert.Empty(t, st.errs["cluster client"], "cluster client errors")
	assert.Empty(t, st.errs["plain, other node"], "errors of plain clients of the nodes that stayed up")
	for _, k := range keys {
		assert.Equal(t, quickLimit, st.admitted[k], "%s: at its limit", k)
	}
}
