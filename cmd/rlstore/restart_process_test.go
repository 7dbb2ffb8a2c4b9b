package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// node is a cluster process started on its host from a fixed command
// line, as an operator or a supervisor starts it, so that it can be
// started again with exactly the same one on the same host.
type node struct {
	*clusterProc
	host nodeHost
	args []string
}

// fixedNodes returns the command lines of three nodes a, b and c on hs, at
// fixed addresses, as the README starts them: each joins the other two.
// seeds(i) says whether node i gets --join; each gets extra(i).
func fixedNodes(t *testing.T, hs []nodeHost, seeds func(i int) bool, extra func(i int) []string) [][]string {
	t.Helper()
	gossip := make([]string, 3)
	for i := range gossip {
		gossip[i] = hs[i].fixedAddr(t, 7946)
	}
	args := make([][]string, 3)
	for i := range args {
		// The default failure detection (lan): a busy test host makes
		// fast's 100 ms probes flap, and a flap loses what a member
		// decided meanwhile for its own clients, a loss of its own.
		args[i] = append(hs[i].flags(), "--port", hs[i].fixedPort(t, 6379), "--node-name", string(rune('a'+i)),
			"--cluster-addr", gossip[i])
		if seeds(i) {
			args[i] = append(args[i], "--join", gossip[(i+1)%3]+","+gossip[(i+2)%3])
		}
		args[i] = append(args[i], extra(i)...)
	}
	return args
}

// startNode starts a node from its command line on h.
func startNode(t *testing.T, h nodeHost, args []string) *node {
	t.Helper()
	p := h.start(t, args...)
	gossip := p.WaitLog(t, gossipLine)[1]
	name := args[slicesIndex(args, "--node-name")+1]
	return &node{clusterProc: &clusterProc{proc: p, name: name, addr: p.Addr(t), gossip: gossip}, host: h, args: args}
}

// startNodes starts a node from each command line, node i on hs[i], each
// from the second on once the ones before have formed (waitFormed); the
// first may wait for its seeds, alone.
func startNodes(t *testing.T, hs []nodeHost, args [][]string) []*node {
	t.Helper()
	ns := make([]*node, len(args))
	for i := range args {
		ns[i] = startNode(t, hs[i], args[i])
		if i > 0 {
			waitFormed(t, procsOf(ns[:i+1])...)
		}
	}
	return ns
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// restart starts n again with its command line on its host.
func (n *node) restart(t *testing.T) *node {
	t.Helper()
	return startNode(t, n.host, n.args)
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
		restartFirst(t, func(int) bool { return true }, func(int) []string { return nil }, syscall.SIGTERM)
	})
	t.Run("README seeds, kill -9", func(t *testing.T) {
		restartFirst(t, func(int) bool { return true }, func(int) []string { return nil }, syscall.SIGKILL)
	})
	t.Run("data dir, no join", func(t *testing.T) {
		restartFirst(t, func(i int) bool { return i > 0 },
			func(int) []string { return []string{"--data-dir", t.TempDir()} }, syscall.SIGTERM)
	})
	t.Run("data dir, no join, kill -9", func(t *testing.T) {
		restartFirst(t, func(i int) bool { return i > 0 },
			func(int) []string { return []string{"--data-dir", t.TempDir()} }, syscall.SIGKILL)
	})
}

// restartFirst starts fixedNodes(seeds, extra), each on a host of its own,
// and stops a with sig and starts it again.
func restartFirst(t *testing.T, seeds func(i int) bool, extra func(i int) []string, sig syscall.Signal) {
	hs := testHosts(t, 3)
	ns := startNodes(t, hs, fixedNodes(t, hs, seeds, extra))
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
		waitShipped(t, len(keys), procsOf(ns)...) // a crash loses what was not shipped: see TestQuickRestartUnderLoad
		ns[0].Kill()
	} else {
		ns[0].Signal(t, sig)
		require.Equal(t, 0, ns[0].ExitCode(t), "a stops cleanly")
		waitClusterSize(t, ns[1].clusterProc, 2)
	}
	ns[0] = ns[0].restart(t)
	// At once, before b and c may have found it: a rejoins them as it
	// starts, and serves its slots only with their state. It may meet one
	// of them first: a member that a busy host starves answers the join's
	// push/pull after memberlist's TCP timeout (a second) while the other
	// suspects it, which memberlist ignores of a node it has not met; it
	// comes by gossip once it refutes the suspicion.
	assert.Contains(t, []string{"2", "3"}, knownNodes(ns[0].clusterProc), "a rejoined b or c as it started, not a cluster of its own")
	q.round(context.Background(), newClient(t, ns[0].addr))
	require.Eventually(t, func() bool { return knownNodes(ns[0].clusterProc) == "3" }, deadline, 10*time.Millisecond,
		"a knows b and c")
	settleProcs(t, procsOf(ns)...)
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

// TestJoinWaitsForSeeds: a node whose seeds are not up yet serves no key
// alone (-CLUSTERDOWN, CLUSTER INFO cluster_state:fail) until one answers;
// then the two form the cluster. --cluster-bootstrap yes serves at once.
func TestJoinWaitsForSeeds(t *testing.T) {
	hs := loopbackHosts(3)
	args := fixedNodes(t, hs, func(int) bool { return true }, func(int) []string { return nil })
	a := startNode(t, hs[0], args[0])
	ca := newClient(t, a.addr)
	_, err := ca.Do(context.Background(), "RL.SLIDE", "k", 3, 60).Result()
	require.Error(t, err)
	assert.Equal(t, "CLUSTERDOWN The cluster is down", err.Error(), "a keyed command on a node that has met no member")
	info, err := ca.ClusterInfo(context.Background()).Result()
	require.NoError(t, err)
	assert.Contains(t, info, "cluster_state:fail\r\n")
	assert.NoError(t, ca.Ping(context.Background()).Err(), "keyless commands are served")

	b := startNode(t, hs[1], args[1])
	settleProcs(t, a.clusterProc, b.clusterProc)
	assert.Equal(t, []int64{1, 3, 2}, slide(t, ca, "k")[:3], "served once a has met b")

	boot := startNode(t, hs[0], append(fixedNodes(t, hs, func(int) bool { return true }, func(int) []string { return nil })[0],
		"--cluster-bootstrap", "yes"))
	assert.Equal(t, []int64{1, 3, 2}, slide(t, newClient(t, boot.addr), "k")[:3], "--cluster-bootstrap yes serves alone")
}

// loadStats counts, across a whole run, each key's admissions and the
// errors each kind of client saw.
type loadStats struct {
	mu       sync.Mutex // guards the fields below
	admitted map[string]int
	admits   map[string][]span // each admission's request, by key
	sent     int
	errs     map[string][]error // by client kind
	errSent  map[string][]time.Time
}

// span is when a request was sent and when its reply came.
type span struct{ sent, replied time.Time }

func newLoadStats() *loadStats {
	return &loadStats{admitted: map[string]int{}, admits: map[string][]span{}, errs: map[string][]error{}, errSent: map[string][]time.Time{}}
}

func (s *loadStats) record(kind, key string, rep []int64, err error, sent time.Time) {
	replied := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	switch {
	case err != nil:
		s.errs[kind] = append(s.errs[kind], err)
		s.errSent[kind] = append(s.errSent[kind], sent)
	case rep[0] == 1:
		s.admitted[key]++
		s.admits[key] = append(s.admits[key], span{sent, replied})
	}
}

// lossBounds bounds, per key, the admissions a kill -9 between killing
// and killed may lose: those the killed owner decided after the drain of
// the last shipment its backups got (at most lossWindow before the kill,
// see lossWindow) and before it died. Such a request was sent before
// killed and answered after killing-lossWindow; every admission so is
// counted, whoever decided it. Counting a key's own admissions, rather
// than a fixed number from a mean rate, follows the host: when it slows,
// the load slows with it. A key that came back from fresh state admits
// its whole limit again, far above.
func (s *loadStats) lossBounds(killing, killed time.Time) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := killing.Add(-lossWindow)
	b := map[string]int{}
	for k, spans := range s.admits {
		for _, sp := range spans {
			if !sp.sent.After(killed) && sp.replied.After(from) {
				b[k]++
			}
		}
	}
	return b
}

// overBounds returns the keys whose admissions above limit exceed their
// bound, each as "key: above/bound".
func (s *loadStats) overBounds(limit int, bounds map[string]int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.admitted)) {
		if over := s.admitted[k] - limit; over > bounds[k] {
			out = append(out, fmt.Sprintf("%s: %d above, bound %d", k, over, bounds[k]))
		}
	}
	return out
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

// over returns the admissions above limit, on how many keys, and the
// most on one key.
func (s *loadStats) over(limit int) (n, keys, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.admitted {
		if a > limit {
			n += a - limit
			keys++
			most = max(most, a-limit)
		}
	}
	return n, keys, most
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

// paced sends RL.SLIDE for keys in turn, from keys[from], through do,
// every period, until stop is closed.
func paced(wg *sync.WaitGroup, stop <-chan struct{}, period time.Duration, keys []string, from int,
	do func(ctx context.Context, key string) ([]int64, error), record func(key string, rep []int64, err error, sent time.Time)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i := from; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			k := keys[i%len(keys)]
			sent := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			rep, err := do(ctx, k)
			cancel()
			record(k, rep, err, sent)
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

// restartWait is how long the nodes that stay up retry a forward to an
// owner whose process is gone before answering CLUSTERDOWN (the server's
// restartWait, server/internal/route/forward.go), less one retry's backoff
// (100 ms): a restart that serves within it fails none of their requests.
const restartWait = 900 * time.Millisecond

func quickRestartUnderLoad(t *testing.T, victim int) {
	ns := startReadme(t)
	var killing, killed, ready time.Time
	// go-redis's defaults: its five dials 100 ms apart ride out the
	// restart, where docs/clients.md's DialerRetries 1 (for the fastest
	// failover to survivors) gave 19 "connection refused" in one -race run.
	st := underLoad(t, ns, victim, quickLimit, &redis.ClusterOptions{}, func() {
		killing = time.Now()
		ns[victim].Kill()
		killed = time.Now()
		ns[victim] = ns[victim].restart(t)
		ready = time.Now() // it logged "ready to accept connections" by now
		settleProcs(t, procsOf(ns)...)
	})
	// What the killed process decided after its last shipment to the
	// backups is lost (docs/replicas.md); a key that started afresh would
	// admit its whole limit again.
	bounds := st.lossBounds(killing, killed)
	assert.Empty(t, st.overBounds(quickLimit, bounds), "admissions above the limit: more than the replicas' loss (decisions of the last %v before the kill)", lossWindow)
	// The nodes that stayed up retry forwards to the restarting owner for
	// restartWait: within it, none of their clients' requests fails. A
	// restart slower than that (under -race on a loaded host) fails those
	// sent before it served, with the owner unreachable, and only those.
	// And a node whose lease renewals a loaded host delays past its lease
	// answers -CLUSTERDOWN until it holds one again (docs/cluster.md,
	// down_lease); no other down reply is allowed: no slot is lost or taken
	// over in a quick restart.
	took := ready.Sub(killing)
	down := map[string]int{}
	for _, n := range ns {
		f, err := infoSection(context.Background(), newClient(t, n.addr), "cluster")
		require.NoError(t, err)
		for _, why := range []string{"lease", "takeover", "lost"} {
			down[why] += atoi(t, f["rl_cluster_down_"+why])
		}
	}
	t.Logf("the restart served %v after the kill began; down replies by reason (the restarted node's since its restart) %v", took.Round(time.Millisecond), down)
	assert.Zero(t, down["takeover"]+down["lost"], "down replies for a slot taken over or lost in a quick restart")
	leaseDown := 0
	for _, kind := range []string{"cluster client", "plain, other node"} {
		for i, err := range st.errs[kind] {
			switch msg := err.Error(); {
			case msg == "CLUSTERDOWN The cluster is down":
				leaseDown++
			case strings.HasPrefix(msg, "CLUSTERDOWN the owner of this key cannot be reached") && took > restartWait && st.errSent[kind][i].Before(ready):
			default:
				assert.Fail(t, "an error of "+kind+" clients", "%v, sent %.3fs after the kill began; the restart served after %v (within %v: no error allowed)",
					err, st.errSent[kind][i].Sub(killing).Seconds(), took.Round(time.Millisecond), restartWait)
			}
		}
	}
	// (The victim's counts from before the kill are gone with its process:
	// a lapse of its own lease before the kill, answered to the cluster
	// client, would fail this. None was seen.)
	assert.LessOrEqual(t, leaseDown, down["lease"], "-CLUSTERDOWN The cluster is down replies no node counted as its lease's")
}

// TestRollingRestartReadme stops each of the README's three nodes in turn
// with SIGTERM and starts it again with its command line, under the load
// of TestQuickRestartUnderLoad: no key admits above its limit, and the
// ClusterClient sees no error (each leave is graceful).
func TestRollingRestartReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node rolling restart under load: not in -short")
	}
	ns := startReadme(t)
	// With the settings docs/clients.md tells users to use: a reload every
	// 0.5 s finds the new owners before a leaving node stops listening.
	// With go-redis's defaults it got 2 "connection refused" in one -race run.
	st := underLoad(t, ns, -1, 2*quickLimit, client.ClusterOptions(), func() {
		for i := range ns {
			ns[i].Signal(t, syscall.SIGTERM)
			require.Equal(t, 0, ns[i].ExitCode(t), "%s stops cleanly", ns[i].name)
			ns[i] = ns[i].restart(t)
			settleProcs(t, procsOf(ns)...)
			assert.Equal(t, "3", knownNodes(ns[i].clusterProc), "%s rejoined", ns[i].name)
		}
	})
	n, _, _ := st.over(2 * quickLimit)
	assert.Zero(t, n, "admissions above the limit across the rolling restart")
	st.mu.Lock()
	defer st.mu.Unlock()
	t.Logf("%d requests; errors: cluster client %v, plain (each on its own node, which restarts) %v",
		st.sent, errSummary(st.errs["cluster client"]), errSummary(st.errs["plain"]))
	assert.Empty(t, errSummary(st.errs["cluster client"]), "a graceful leave costs ClusterClient no error")
}

// startReadme starts the README's three nodes, each on a host of its own,
// each joining the others, each with a data dir and replicas, and waits
// until they settle.
func startReadme(t *testing.T) []*node {
	t.Helper()
	hs := testHosts(t, 3)
	args := fixedNodes(t, hs, func(int) bool { return true },
		func(int) []string {
			return []string{"--data-dir", t.TempDir(), "--replica-interval", replicaIv.String()}
		})
	ns := startNodes(t, hs, args)
	settleProcs(t, procsOf(ns)...)
	return ns
}

// underLoad runs act while a go-redis ClusterClient of opts (2 × 100 requests a
// second) and a plain client on each node (100 a second each) decide 60
// keys of limit an hour, from when a third of each key's limit is used
// until each is sent twice its limit, half a limit after act at least,
// and returns what they saw. ns[victim]'s plain
// client's errors are counted apart: its process is the one act stops.
func underLoad(t *testing.T, ns []*node, victim, limit int, opts *redis.ClusterOptions, act func()) *loadStats {
	t.Helper()
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprint("load:", i))
	}
	st := newLoadStats()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	opts.Addrs = []string{ns[0].addr, ns[1].addr, ns[2].addr}
	cc := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = cc.Close() })
	slideVia := func(c interface {
		Do(context.Context, ...any) *redis.Cmd
	}) func(ctx context.Context, key string) ([]int64, error) {
		return func(ctx context.Context, key string) ([]int64, error) {
			return c.Do(ctx, "RL.SLIDE", key, limit, 3600).Int64Slice()
		}
	}
	recordAs := func(kind string) func(string, []int64, error, time.Time) {
		return func(k string, rep []int64, err error, sent time.Time) { st.record(kind, k, rep, err, sent) }
	}
	// Each client starts at another fifth of the keys, so that a key's
	// decisions are spread over time rather than five at once.
	for j := range 2 {
		paced(&wg, stop, 10*time.Millisecond, keys, j*len(keys)/5, slideVia(cc), recordAs("cluster client"))
	}
	for i, n := range ns {
		kind := "plain, other node"
		switch {
		case victim < 0:
			kind = "plain" // every node restarts
		case i == victim:
			kind = "plain, restarted node"
		}
		paced(&wg, stop, 10*time.Millisecond, keys, (2+i)*len(keys)/5, slideVia(newClient(t, n.addr)), recordAs(kind))
	}
	waitSent(t, st, len(keys)*limit/3)
	act()
	// Every key is sent twice its limit in all, and at least half a limit
	// after act. A key that came back from a fresh or an older state
	// admits above its limit within that: it had a third of its limit
	// before act, so the first limit's worth after the loss shows it, and
	// one at its limit when act ended shows it in half a limit. (Two
	// limits after act, as before, took 14 s of the rolling restart's 34:
	// act alone had sent each key past twice its limit.)
	waitSent(t, st, max(st.sentNow()+len(keys)*limit/2, 2*len(keys)*limit))
	close(stop)
	wg.Wait()
	n, k, most := st.over(limit)
	t.Logf("%d requests; %d admitted above the limit on %d keys, at most %d on one", st.sent, n, k, most)
	for _, kind := range slices.Sorted(maps.Keys(st.errs)) {
		t.Logf("errors of %s clients: %v; the first: %v", kind, errSummary(st.errs[kind]), st.errs[kind][0])
	}
	for _, k := range keys {
		// A request retried after its owner's connection broke may be
		// charged twice, the safe side (docs/cluster.md), and one whose
		// reply was lost is not counted: a key may end a little short.
		assert.GreaterOrEqual(t, st.admitted[k], limit-5, "%s: at its limit, or nearly", k)
	}
	return st
}
