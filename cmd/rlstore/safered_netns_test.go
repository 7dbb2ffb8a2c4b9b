package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The red-team tests of issue 27 attack the safety rule ("a slot is served
// by at most one node at any moment") with real processes: nodes in the
// network namespaces of the split tests (rlq*, 10.231.27.0/24, see
// split_netns_test.go), cut with iptables, paused with SIGSTOP. Each counts
// every key's admissions over the whole run against its limit, and polls
// every node's own view (its table's owner of each key, and whether it
// holds its lease) to catch two nodes that each name themselves a key's
// owner while both hold their leases.

// redNode is one node of a red-team run.
type redNode struct {
	name string
	ip   string
	p    *proc
	c    *redis.Client
}

// startRedNodes starts a node in each namespace, every one joining all,
// with extra flags, and waits until each sees the others and holds its
// lease. Unlike startSplitNodes it keeps the processes, to pause them.
// Node i is named n<i>, as in the simulation (cluster/sim_test.go): which
// chunks a membership change moves depends on the names.
func startRedNodes(t *testing.T, ips []string, extra ...string) []*redNode {
	t.Helper()
	var seeds []string
	for _, ip := range ips {
		seeds = append(seeds, ip+":7946")
	}
	var ns []*redNode
	for i, ip := range ips {
		name := fmt.Sprintf("n%d", i)
		args := append([]string{"netns", "exec", fmt.Sprintf("rlq%d", i), rlstoreBin, "--bind", ip, "--port", "6379",
			"--node-name", name, "--cluster-addr", ip + ":7946", "--join", strings.Join(seeds, ","),
			"--cluster-key", splitKey}, extra...)
		p := rlstoretest.Start(t, "ip", []string{"RLSTORE_REQUIREPASS=" + splitPassword}, args...)
		p.Addr(t)
		c := redis.NewClient(&redis.Options{Addr: ip + ":6379", Password: splitPassword, Protocol: 2,
			MaxRetries: -1, ReadTimeout: 2 * time.Second, PoolSize: 4})
		t.Cleanup(func() { _ = c.Close() })
		// ip netns exec execs rlstore in place: the pid is the node's, so
		// SIGSTOP reaches it. A cleanup resumes it, so that a kill ends it.
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.Cmd.Process.Pid))
		require.NoError(t, err)
		require.NotEqual(t, "ip", strings.TrimSpace(string(comm)), "ip netns exec forked: SIGSTOP would miss the node")
		t.Cleanup(func() { _ = p.Cmd.Process.Signal(syscall.SIGCONT) })
		ns = append(ns, &redNode{name: name, ip: ip, p: p, c: c})
	}
	want := fmt.Sprintf("cluster_size:%d\r\n", len(ips))
	for _, n := range ns {
		require.Eventually(t, func() bool {
			info, err := n.c.ClusterInfo(context.Background()).Result()
			return err == nil && contains(info, want) && contains(info, "cluster_state:ok")
		}, 30*time.Second, 100*time.Millisecond, "every node sees the others and holds its lease")
	}
	return ns
}

// cutPairs drops, both ways, every packet between the nodes of each pair
// (on: add the rules; off: delete them), every namespace's rules at once.
func cutPairs(t *testing.T, ips []string, pairs [][2]int, on bool) {
	t.Helper()
	op := "-A"
	if !on {
		op = "-D"
	}
	scripts := make([][]string, len(ips))
	for _, pr := range pairs {
		for _, e := range [][2]int{pr, {pr[1], pr[0]}} {
			scripts[e[0]] = append(scripts[e[0]], fmt.Sprintf("iptables %s INPUT -s %s -j DROP && iptables %s OUTPUT -d %s -j DROP",
				op, ips[e[1]], op, ips[e[1]]))
		}
	}
	errs := make([]error, len(ips))
	var wg sync.WaitGroup
	for a, script := range scripts {
		if len(script) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("ip", "netns", "exec", fmt.Sprintf("rlq%d", a), "sh", "-c", strings.Join(script, " && ")).CombinedOutput()
			if err != nil {
				errs[a] = fmt.Errorf("%w: %s", err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

// sidePairs lists every pair with one node in side and one outside it.
func sidePairs(n int, side map[int]bool) [][2]int {
	var ps [][2]int
	for a := range n {
		for b := a + 1; b < n; b++ {
			if side[a] != side[b] {
				ps = append(ps, [2]int{a, b})
			}
		}
	}
	return ps
}

// tableOf is the slot table every node computes over these members.
func tableOf(t *testing.T, names ...string) *cluster.Table {
	t.Helper()
	var nodes []cluster.Node
	for _, n := range names {
		nodes = append(nodes, cluster.Node{Name: n})
	}
	tb, err := cluster.NewTable(1, nodes)
	require.NoError(t, err)
	return tb
}

// divergentKeys returns n keys (prefix + number) whose owner in table a is
// one of inA and in table b one of inB: keys two nodes with those views
// would both serve.
func divergentKeys(t *testing.T, prefix string, n int, a *cluster.Table, inA []string, b *cluster.Table, inB []string) []string {
	t.Helper()
	var keys []string
	for i := 0; len(keys) < n && i < 1_000_000; i++ {
		k := fmt.Sprint(prefix, i)
		s := cluster.Slot([]byte(k))
		if slices.Contains(inA, a.Owner(s).Name) && slices.Contains(inB, b.Owner(s).Name) {
			keys = append(keys, k)
		}
	}
	require.Len(t, keys, n, "no keys whose owners differ so")
	return keys
}

// viewWatch polls every node's own view of keys: which node its table
// names each key's owner, and whether it holds its lease
// (cluster_state:ok). It records each moment two nodes that hold their
// leases both name themselves the owner of one key.
type viewWatch struct {
	mu     sync.Mutex
	claims map[string][]string // key → "nodeA+nodeB@seconds" of each double claim seen
	start  time.Time
	last   map[string]string // node → its state and table size at the last poll
	log    []string          // each change of a node's state or table size, with its time
}

func (w *viewWatch) run(ctx context.Context, ns []*redNode, keys []string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			w.poll(ctx, ns, keys)
		}
	}()
	return &wg
}

func (w *viewWatch) poll(ctx context.Context, ns []*redNode, keys []string) {
	claimed := map[string][]string{}
	for _, n := range ns {
		for _, k := range w.claimsOf(ctx, n, keys) {
			claimed[k] = append(claimed[k], n.name)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, by := range claimed {
		if len(by) > 1 {
			w.claims[k] = append(w.claims[k], fmt.Sprintf("%s@%.2f", strings.Join(by, "+"), time.Since(w.start).Seconds()))
		}
	}
}

// claimsOf returns the keys n's table names n the owner of, if n holds
// its lease.
func (w *viewWatch) claimsOf(ctx context.Context, n *redNode, keys []string) []string {
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // a paused node answers nothing
	defer cancel()
	info, err := n.c.ClusterInfo(ctx).Result()
	w.note(n.name, info, err)
	if err != nil || !contains(info, "cluster_state:ok") {
		return nil
	}
	var mine []string
	for _, k := range keys {
		m, err := n.c.Do(ctx, "RL.CLUSTER", "OWNER", k).Result()
		if err != nil {
			return mine
		}
		if ownerOf(m) == n.name {
			mine = append(mine, k)
		}
	}
	return mine
}

// note records a change in a node's cluster_state or cluster_size.
func (w *viewWatch) note(name, info string, err error) {
	now := "unreachable"
	if err == nil {
		now = infoField(info, "cluster_state") + "/" + infoField(info, "cluster_size")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last[name] != now {
		w.last[name] = now
		w.log = append(w.log, fmt.Sprintf("%s %s@%.2f", name, now, time.Since(w.start).Seconds()))
	}
}

func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return v
		}
	}
	return ""
}

// ownerOf reads the owner from RL.CLUSTER OWNER's reply, a flat list of
// pairs in RESP2.
func ownerOf(rep any) string {
	l, _ := rep.([]any)
	for i := 0; i+1 < len(l); i += 2 {
		if l[i] == "owner" {
			s, _ := l[i+1].(string)
			return s
		}
	}
	return ""
}

// report logs the keys over their limit and the double claims, and
// returns the most admissions of one key.
func (l *splitLoad) report(t *testing.T, keys []string, w *viewWatch, what string) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	most, over := 0, 0
	for _, k := range keys {
		most = max(most, l.admitted[k])
		if l.admitted[k] > splitLimit {
			over += l.admitted[k] - splitLimit
			t.Logf("%s (slot %d) admitted %d times, by client of node@seconds: %v", k, cluster.Slot([]byte(k)), l.admitted[k], l.when[k])
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if c := w.claims[k]; len(c) > 0 {
			t.Logf("%s (slot %d): two nodes holding their leases named themselves its owner: %v", k, cluster.Slot([]byte(k)), c)
		}
	}
	t.Logf("each node's state/size as polled: %v", w.log)
	t.Logf("%s: most admissions of one key %d (limit %d), %d above the limits in all; %d keys claimed twice; replies %v",
		what, most, splitLimit, over, len(w.claims), l.replies)
	return most
}

// redDuration reads a schedule's duration from env (for replaying
// variants by hand), or def.
func redDuration(t *testing.T, env string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err, env)
	return d
}

// TestRedPausedAtHeal replays the simulation's seed 1778 with processes:
// 5 nodes split 2/3 ({n1, n3} cut off) long enough that each side
// declares the other dead; n2, on the majority side, is paused with
// SIGSTOP just before the heal. The minority declared n2 dead during the
// split and cannot hear it refute while it is paused, so after the heal
// n1 and n3 compute their table over four members, while n0 and
// n4 still count n2 alive (until their own detection) and compute it
// over five. Bounded loads give some slots to n1 or n3 in one table
// and to n0 or n4 in the other: the keys used here are those.
//
// Finding R1 (see docs/cluster.md "Safety", "The holder"): up to 40 of
// 20 on a third of the keys, 412 admissions above the limits in a run:
// n4 handed the keys' slots to n2 during the split, and after the heal
// n1, importing them from n4 by its table, was told they were released
// and served them from nothing while n2 held them; a backup's PULL
// answer ended another such import, and a request forwarded as a
// handoff's hop was served by a node still importing the slot. Closed by
// the holder (RELEASED's ASK), PULL only for restarts and rejoins, and a
// handoff's hop served only from the import's old owner. Then 21 of 20
// on chunk 789-809 in some runs (n4 relayed a request by its table to
// n1, which imported the chunk from n4 and served the hop from its old
// owner: now no importer serves a hop), and the resumed n2's slots down
// to the end (each runner-up had lost them at n2's confirmed death and
// answered its RELEASED that it held them: now released to a rejoin's
// RELEASED KEEP). It ran only with RL_RED_FINDINGS=1 until it passed 3
// runs in a row (docs/cluster.md, "Safety").
func TestRedPausedAtHeal(t *testing.T) {
	pausedAtHealRun(t, 2, map[int]bool{1: true, 3: true}, func(all *cluster.Table) []string {
		without2 := tableOf(t, "n0", "n1", "n3", "n4")
		return divergentKeys(t, "red1778:", 30, without2, []string{"n1", "n3"}, all, []string{"n0", "n4"})
	})
}

// TestRedMinorityPausedAtHeal is TestRedPausedAtHeal with the paused node
// on the minority side: {n1, n4} split from {n0, n2, n3}, n1 paused just
// before the heal. The majority declared n1 dead and computes its table
// over four; n4, which saw n1 alive throughout, over five. The keys are
// those the five-member table gives n4 and the four-member one gives a
// majority node.
//
// Finding R4 (3 runs of 3): 1 key 21 of 20 (twice) or 15 keys 40 of 20;
// in one run the extra admission came 0.1 s after n1 resumed, in the
// burst of handovers its pre-pause table starts. And from the heal until
// n1 resumes, n2 answers the keys of the slots it owns in the four-member
// table as lost, though their owner n4, which holds their state, is alive
// and reachable (about 4,400 -CLUSTERDOWN replies over 5.7 s after the
// heal). Closed: n2 had the slots lost with holder n1 (its last owner by
// n2's table), took n4's kept keys for them and kept them lost, then
// pointed n4 at n1, which released them, and n4 served them from nothing
// (now such kept keys are refused, and n4 keeps them); and n4's own
// slots, lost while it waited for them from the paused n1, stayed lost
// after n1 resumed (now they come back with it). It ran only with
// RL_RED_FINDINGS=1 until it passed 3 runs in a row. Still open, an
// availability cost the test does not assert: n2 answers those slots as
// lost until n1 resumes (1,840 to 6,488 replies in those 3 runs), since
// its table named n1 their owner last, though n4 keeps their state.
func TestRedMinorityPausedAtHeal(t *testing.T) {
	pausedAtHealRun(t, 1, map[int]bool{1: true, 4: true}, func(all *cluster.Table) []string {
		without1 := tableOf(t, "n0", "n2", "n3", "n4")
		return divergentKeys(t, "redminor:", 30, without1, []string{"n0", "n2", "n3"}, all, []string{"n4"})
	})
}

// pausedAtHealRun splits side from the rest of 5 nodes, pauses node
// paused just before the heal, and resumes it RL_RED_PAUSE after.
func pausedAtHealRun(t *testing.T, paused int, side map[int]bool, keys func(all *cluster.Table) []string) {
	split := redDuration(t, "RL_RED_SPLIT", 5*time.Second)
	lead := redDuration(t, "RL_RED_LEAD", 300*time.Millisecond) // the pause starts this long before the heal
	pause := redDuration(t, "RL_RED_PAUSE", 6*time.Second)
	r := startRedRun(t, 5, keys)
	cutPairs(t, r.ips, sidePairs(5, side), true)
	r.logf("split %v from the rest", side)
	splitAt := time.Since(r.l.start)
	time.Sleep(split - lead)
	if pause > 0 { // RL_RED_PAUSE=0: the split alone, for comparison
		require.NoError(t, r.ns[paused].p.Cmd.Process.Signal(syscall.SIGSTOP))
		r.logf("n%d paused", paused)
	}
	time.Sleep(lead)
	cutPairs(t, r.ips, sidePairs(5, side), false)
	r.logf("healed")
	healedAt := time.Since(r.l.start)
	time.Sleep(max(pause-lead, 0))
	require.NoError(t, r.ns[paused].p.Cmd.Process.Signal(syscall.SIGCONT))
	r.logf("n%d resumed", paused)
	time.Sleep(6 * time.Second) // the paused node is back: slots go home
	most, _ := r.finish(fmt.Sprintf("split %v, n%d paused at the heal", side, paused))
	require.LessOrEqual(t, most, splitLimit, "a key admitted above its limit: a node served its slot from nothing")
	// The paused node's own loss is what it decided after its last
	// shipment (a stop's), within countsKept's redShipmentLoss.
	countsKept(t, r.cl, r.ns[0].c, r.ck, side, splitAt, healedAt)
}

// redLogs writes every node's log to the folder RL_RED_LOGDIR names,
// to trace a passing run too (a failing one logs them anyway).
func redLogs(t *testing.T, ns []*redNode) {
	dir := os.Getenv("RL_RED_LOGDIR")
	if dir == "" {
		return
	}
	for _, n := range ns {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n.name+".log"), []byte(n.p.Log.String()), 0o644))
	}
}

// redRun is one red-team run: n nodes, keys used up first, then the
// schedule; it returns the load, for the bound, and the watch.
type redRun struct {
	t    *testing.T
	ips  []string
	ns   []*redNode
	keys []string
	l    *splitLoad
	cl   *countLoad
	ck   []string // counting keys
	w    *viewWatch
	stop chan struct{}
	wgs  []*sync.WaitGroup
}

// startRedRun starts n nodes and the load on keys(table over all nodes),
// and waits until every key is used up and its copies shipped.
func startRedRun(t *testing.T, n int, keys func(all *cluster.Table) []string) *redRun {
	ips := setupSplitNet(t, n)
	ns := startRedNodes(t, ips)
	var names []string
	var cs []*redis.Client
	for _, nd := range ns {
		names = append(names, nd.name)
		cs = append(cs, nd.c)
	}
	r := &redRun{t: t, ips: ips, ns: ns, keys: keys(tableOf(t, names...)), stop: make(chan struct{})}
	r.l = &splitLoad{admitted: map[string]int{}, replies: map[string]int{}, start: time.Now(), when: map[string][]string{}}
	r.w = &viewWatch{claims: map[string][]string{}, start: r.l.start, last: map[string]string{}}
	t.Logf("run starts at %s", r.l.start.UTC().Format("15:04:05.000"))
	r.cl = newCountLoad(r.l.start)
	for _, k := range r.keys {
		r.ck = append(r.ck, "count:"+k)
	}
	r.wgs = append(r.wgs, r.l.run(context.Background(), cs, r.keys, r.stop), r.w.run(context.Background(), ns, r.keys, r.stop),
		r.cl.run(context.Background(), cs, r.ck, r.stop))
	r.l.waitUsedUp(t, r.keys) // and its copies shipped
	return r
}

// settle waits until every node sees all the others, holds its lease and
// moves no slot, for at most the fixed wait it replaces (most), then for
// three more rounds of every client of the load.
func (r *redRun) settle(most time.Duration) {
	r.t.Helper()
	var cs []*redis.Client
	for _, n := range r.ns {
		cs = append(cs, n.c)
	}
	healed := healedBy(r.t, cs, most)
	r.logf("settled (%v)", healed)
	r.l.waitRounds(r.t, 3)
}

func (r *redRun) logf(format string, args ...any) {
	r.t.Helper()
	r.t.Logf("%.2fs: %s", time.Since(r.l.start).Seconds(), fmt.Sprintf(format, args...))
}

// finish stops the load and returns the most admissions of one key, and
// what the counting keys show.
func (r *redRun) finish(what string) (int, countResult) {
	r.t.Helper()
	close(r.stop)
	for _, wg := range r.wgs {
		wg.Wait()
	}
	most := r.l.report(r.t, r.keys, r.w, what)
	cr := r.cl.report(r.t, r.ns[0].c, r.ck)
	redLogs(r.t, r.ns)
	return most, cr
}

// redShipmentLoss bounds what a counting key may lose when its owner
// stops: the decisions of one --replica-interval (100 ms) before the stop,
// at most 5 clients × 20 requests a second × 0.1 s = 10, doubled for a
// shipment under way.
const redShipmentLoss = 20

// keysOwned returns n keys whose owner in all is one of owners.
func keysOwned(prefix string, n int, all *cluster.Table, owners ...string) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprint(prefix, i)
		if slices.Contains(owners, all.Owner(cluster.Slot([]byte(k))).Name) {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestRedPauseNearDetection pauses n2 of 5 for about the failure
// detection time (lan timing: 2-2.5 s), so that its death may be
// declared by some nodes and refuted before others act on it, and
// checks that no key admits above its limit: the keys are n2's own.
// RL_RED_PAUSES (a comma list of durations) sweeps several pauses.
func TestRedPauseNearDetection(t *testing.T) {
	if testing.Short() {
		t.Skip("5 nodes in network namespaces, paused: not in -short")
	}
	pauses := []time.Duration{2500 * time.Millisecond}
	if s := os.Getenv("RL_RED_PAUSES"); s != "" {
		pauses = nil
		for _, f := range strings.Split(s, ",") {
			d, err := time.ParseDuration(f)
			require.NoError(t, err, "RL_RED_PAUSES")
			pauses = append(pauses, d)
		}
	}
	for _, d := range pauses {
		t.Run(d.String(), func(t *testing.T) {
			r := startRedRun(t, 5, func(all *cluster.Table) []string { return keysOwned("redpause:", 30, all, "n2") })
			require.NoError(t, r.ns[2].p.Cmd.Process.Signal(syscall.SIGSTOP))
			r.logf("n2 paused")
			time.Sleep(d) // the pause's length is the subject
			require.NoError(t, r.ns[2].p.Cmd.Process.Signal(syscall.SIGCONT))
			r.logf("n2 resumed")
			// A suspicion of n2 raised during the pause is refuted, or
			// becomes a death, within lan's detection time (2-2.5 s); then
			// any takeover and handback end, and every client asks about
			// every key three more times. (A fixed 8 s before.)
			time.Sleep(3 * time.Second) // the product's detection time, not an ordering
			r.settle(5 * time.Second)
			most, cr := r.finish(fmt.Sprintf("n2 paused %v", d))
			require.LessOrEqual(t, most, splitLimit, "a key admitted above its limit")
			require.LessOrEqual(t, cr.maxLost, redShipmentLoss, "a counting key lost more than a replica shipment's decisions")
		})
	}
}

// TestRedNonTransitive cuts n0 from n2, n3 and n4 while n1 still reaches
// everyone (outside the proof's clean partitions: X reaches Z, Z reaches
// Y, X and Y do not), and measures what it costs: memberlist's indirect
// probes through n1 keep everyone alive in every view, so no slot moves,
// while n0 gets grants from n1 only and loses its lease.
func TestRedNonTransitive(t *testing.T) {
	if testing.Short() {
		t.Skip("5 nodes in network namespaces: not in -short")
	}
	r := startRedRun(t, 5, func(all *cluster.Table) []string {
		var keys []string
		for _, o := range all.Nodes() {
			keys = append(keys, keysOwned("rednt:"+o.Name+":", 6, all, o.Name)...)
		}
		return keys
	})
	pairs := [][2]int{{0, 2}, {0, 3}, {0, 4}}
	cutPairs(t, r.ips, pairs, true)
	r.logf("n0 cut from n2, n3, n4")
	time.Sleep(redDuration(t, "RL_RED_CUT", 10*time.Second))
	cutPairs(t, r.ips, pairs, false)
	r.logf("healed")
	r.settle(6 * time.Second) // a fixed 6 s before
	most, cr := r.finish("n0 reaches n1 only")
	require.LessOrEqual(t, most, splitLimit, "a key admitted above its limit")
	require.Zero(t, cr.lost, "a counting key lost decisions though no node stopped")
}

// TestRedStaleBackup cuts only the link between an owner (n2) and its
// slots' backup (n1) of 3 nodes: n0 reaches both, so memberlist's
// indirect probes keep everyone alive, and n2 keeps its lease (n0's grant
// and its own). Its keys are then used up, and their copies cannot reach
// n1. kill -9 of n2 then makes n1 take the slots over from copies as old
// as the cut, not one --replica-interval old as docs/cluster.md bounds the
// loss.
//
// Finding R2 (1 run of 1, every key): all 30 keys admitted 40 of 20. n1
// logged "promoted copies of the slots taken over keys=0" and served the
// slots from nothing after the takeover's wait; the lost-slot rule
// counted the slots held by n1 since its full sync from n2 at start. Now
// n2 serves a slot only while its backup acknowledges its changes within
// three lease terms (3 s, docs/replicas.md): that long into the cut it
// answers CLUSTERDOWN for those keys, and n1 takes them over from copies
// that lack nothing (0 above the limit).
func TestRedStaleBackup(t *testing.T) {
	if testing.Short() {
		t.Skip("3 nodes in network namespaces: not in -short")
	}
	staleBackupRun(t, false, false)
}

// TestRedStaleBackupPaused is TestRedStaleBackup with n2 paused (SIGSTOP)
// instead of killed: docs/cluster.md says a pause loses nothing. It takes
// minutes: the resumed n2's client waits out its read timeouts, key by
// key, while n2 forwards across the cut.
func TestRedStaleBackupPaused(t *testing.T) {
	if testing.Short() {
		t.Skip("3 nodes in network namespaces, minutes: not in -short")
	}
	staleBackupRun(t, false, true)
}

// TestRedStaleBackupHealed is TestRedStaleBackup with the cut healed 3 s
// (30 shipments) before the crash, and the keys used up at once, within
// the 3 s n2 serves them for without n1's acknowledgement: a used-up key
// that is only denied afterwards does not change, yet the backup must get
// it. It does: the owner full-syncs the backup once it reaches it. It
// failed (39 of 20) until the backup refused shipments that the healed
// link delivered late on the connection from before the cut, over the
// newer full sync (TestShipmentOnAnOlderSyncRefused).
func TestRedStaleBackupHealed(t *testing.T) {
	if testing.Short() {
		t.Skip("3 nodes in network namespaces: not in -short")
	}
	staleBackupRun(t, true, false)
}

func staleBackupRun(t *testing.T, heal, pause bool) {
	ips := setupSplitNet(t, 3)
	ns := startRedNodes(t, ips)
	all := tableOf(t, "n0", "n1", "n2")
	var keys []string
	for i := 0; len(keys) < 30; i++ {
		k := fmt.Sprint("redstale:", i)
		s := cluster.Slot([]byte(k))
		if ru, _ := all.RunnerUp(s); all.Owner(s).Name == "n2" && ru.Name == "n1" {
			keys = append(keys, k)
		}
	}
	// The joins' handoffs end before the cut: a slot n2 still imported
	// from n1 would be forwarded across it, neither used up nor refused.
	require.True(t, settledBy(t, []*redis.Client{ns[0].c, ns[1].c, ns[2].c}, 3, healedInfo, deadline), "the joins settle")
	cutPairs(t, ips, [][2]int{{1, 2}}, true)
	start := time.Now()
	t.Logf("run starts at %s; n1 and n2 cut from each other", start.UTC().Format("15:04:05.000"))
	settle := 4 * time.Second // past the replicas' MaxLag (3 s): n2 no longer serves the keys n1 backs up
	if heal {
		settle = 0 // n2 uses the keys up within MaxLag, and n1 misses those decisions until the heal
	}
	time.Sleep(redDuration(t, "RL_RED_SETTLE", settle)) // the cut is in place before the keys are used
	l := &splitLoad{admitted: map[string]int{}, replies: map[string]int{}, start: start, when: map[string][]string{}}
	w := &viewWatch{claims: map[string][]string{}, start: start, last: map[string]string{}}
	stop := make(chan struct{})
	var cs []*redis.Client
	for _, n := range ns {
		if n.name != "n1" { // n1's client would forward to n2 across the cut
			cs = append(cs, n.c)
		}
	}
	lwg := l.run(context.Background(), cs, keys, stop)
	wwg := w.run(context.Background(), ns, keys, stop)
	// n2 serves its keys through the cut until its backup n1 is MaxLag
	// behind (docs/replicas.md), then answers CLUSTERDOWN for them.
	if !assert.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.replies["CLUSTERDOWN"] >= len(keys) {
			return true
		}
		for _, k := range keys {
			if l.admitted[k] < splitLimit {
				return false
			}
		}
		return true
	}, deadline, 50*time.Millisecond, "n2 uses its keys up through the cut, or refuses them") {
		l.mu.Lock()
		t.Logf("replies %v; admitted %v", l.replies, l.admitted)
		l.mu.Unlock()
		redLogs(t, ns)
		t.FailNow()
	}
	time.Sleep(time.Second) // a few shipments' time, which cannot reach n1
	if heal {
		cutPairs(t, ips, [][2]int{{1, 2}}, false)
		t.Logf("%.2fs: n1-n2 healed", time.Since(start).Seconds())
		time.Sleep(3 * time.Second) // 30 shipments' time, which can reach n1
	}
	if pause {
		require.NoError(t, ns[2].p.Cmd.Process.Signal(syscall.SIGSTOP))
		t.Logf("%.2fs: n2 paused", time.Since(start).Seconds())
	} else {
		ns[2].p.Kill()
		t.Logf("%.2fs: n2 killed", time.Since(start).Seconds())
	}
	// Detection, the takeover's wait, then n0 and n1 count two owners,
	// hold their leases and have no slot in its takeover wait (n1 serves
	// n2's keys from its copies; a slot may stay lost while n2 is paused);
	// n0's client then asks about every key three more times. At most the
	// fixed 8 s this was before.
	served := settledBy(t, []*redis.Client{ns[0].c, ns[1].c}, 2, healedInfo[:2], 8*time.Second)
	t.Logf("%.2fs: n0 and n1 serve n2's slots (%v)", time.Since(start).Seconds(), served)
	l.waitRounds(t, 3, 0)
	if pause {
		// resumed, its client's requests end, and the heal runs
		require.NoError(t, ns[2].p.Cmd.Process.Signal(syscall.SIGCONT))
		t.Logf("%.2fs: n2 resumed", time.Since(start).Seconds())
		time.Sleep(3 * time.Second)
	}
	close(stop)
	lwg.Wait()
	wwg.Wait()
	most := l.report(t, keys, w, fmt.Sprintf("n1-n2 cut, n2 stopped (paused %v)", pause))
	redLogs(t, ns)
	require.LessOrEqual(t, most, splitLimit, "a key admitted above its limit: the backup took over from copies as old as the cut")
}
