package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/rlstore/rlstore/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The --owner-unreachable tests measure what each mode admits through a
// partition, under issue 27's load: 200 keys of RL.SLIDE k 50 3600, every
// node asked about every key each round; "factor" is the most admissions
// of one key divided by the limit. Nodes run in network namespaces rlo0,
// rlo1, ... whose veths hang on a bridge rlobr in this test's namespace,
// on 10.231.29.0/24 (the bridge is .254, node i is .i+1): the clients
// reach every node, while iptables DROP inside the namespaces cuts the
// nodes from each other. Root only; everything is removed afterwards.
const (
	unreachNet      = "10.231.29."
	unreachBridge   = "rlobr"
	unreachPassword = "rlo-test-password"
	unreachKey      = "cmxvLXRlc3Qta2V5LTAxMjM0NTY3ODlhYmNkZWYwMTI=" // 32 bytes
	unreachLimit    = 50
	unreachKeys     = 200
	unreachRound    = 100 * time.Millisecond
	unreachHold     = 10 * time.Second // the cut with RL_UNREACH_FULL: detection (2.5-3 s), the takeover's wait (1.25 s), then 50 rounds
	unreachAfter    = 5 * time.Second  // the cut's 50 rounds once it has taken its whole effect, without RL_UNREACH_FULL
	unreachSides    = 2                // every cut here has two sides
)

func unreachCleanup(n int) {
	for i := range n {
		_ = exec.Command("ip", "netns", "del", fmt.Sprintf("rlo%d", i)).Run()
		_ = exec.Command("ip", "link", "del", fmt.Sprintf("rlop%d", i)).Run() // gone with its namespace, unless a process kept that alive
	}
	_ = exec.Command("ip", "link", "del", unreachBridge).Run()
}

// setupUnreachNet makes the bridge and n namespaces, and returns the
// nodes' addresses.
func setupUnreachNet(t *testing.T, n int) []string {
	t.Helper()
	needNetns(t, "ip", "iptables")
	unreachCleanup(8) // what a killed earlier run left
	t.Cleanup(func() { unreachCleanup(n) })
	netnsRun(t, "ip", "link", "add", unreachBridge, "type", "bridge")
	netnsRun(t, "ip", "addr", "add", unreachNet+"254/24", "dev", unreachBridge)
	netnsRun(t, "ip", "link", "set", unreachBridge, "up")
	var ips []string
	for i := range n {
		ns, veth, port := fmt.Sprintf("rlo%d", i), fmt.Sprintf("rlov%d", i), fmt.Sprintf("rlop%d", i)
		ip := fmt.Sprintf("%s%d", unreachNet, i+1)
		netnsRun(t, "ip", "netns", "add", ns)
		netnsRun(t, "ip", "link", "add", "name", veth, "netns", ns, "type", "veth", "peer", "name", port)
		netnsRun(t, "ip", "link", "set", port, "master", unreachBridge, "up")
		netnsRun(t, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", veth)
		netnsRun(t, "ip", "-n", ns, "link", "set", veth, "up")
		netnsRun(t, "ip", "-n", ns, "link", "set", "lo", "up")
		ips = append(ips, ip)
	}
	return ips
}

// startUnreachNodes starts a node in each namespace with mode, every one
// joining all, and waits until each holds its lease.
func startUnreachNodes(t *testing.T, ips []string, mode string) []*redis.Client {
	t.Helper()
	seeds := ""
	for i, ip := range ips {
		if i > 0 {
			seeds += ","
		}
		seeds += ip + ":7946"
	}
	var cs []*redis.Client
	for i, ip := range ips {
		p := rlstoretest.Start(t, "ip", []string{"RLSTORE_REQUIREPASS=" + unreachPassword},
			"netns", "exec", fmt.Sprintf("rlo%d", i), rlstoreBin, "--bind", ip, "--port", "6379",
			"--node-name", fmt.Sprintf("o%d-%s-%d", len(ips), mode, i), "--cluster-addr", ip+":7946", "--join", seeds,
			"--cluster-key", unreachKey, "--owner-unreachable", mode)
		p.Addr(t)
		c := redis.NewClient(&redis.Options{Addr: ip + ":6379", Password: unreachPassword, Protocol: 2,
			MaxRetries: -1, ReadTimeout: 3 * time.Second, PoolSize: 1})
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	want := fmt.Sprintf("cluster_size:%d\r\n", len(ips))
	for _, c := range cs {
		require.Eventually(t, func() bool {
			info, err := c.ClusterInfo(context.Background()).Result()
			return err == nil && contains(info, want) && contains(info, "cluster_state:ok")
		}, 30*time.Second, 100*time.Millisecond, "every node sees the others and holds its lease")
	}
	return cs
}

// unreachCut drops, inside each namespace, every packet to or from the
// nodes on the other side: the clients on the bridge still reach all.
func unreachCut(t *testing.T, ips []string, side map[int]bool, on bool) {
	t.Helper()
	op := map[bool]string{true: "-A", false: "-D"}[on]
	for a := range ips {
		for b := range ips {
			if side[a] != side[b] {
				ns := fmt.Sprintf("rlo%d", a)
				netnsRun(t, "ip", "netns", "exec", ns, "iptables", op, "INPUT", "-s", ips[b], "-j", "DROP")
				netnsRun(t, "ip", "netns", "exec", ns, "iptables", op, "OUTPUT", "-d", ips[b], "-j", "DROP")
			}
		}
	}
}

// unreachLoad asks every node about every key each round, one pipeline
// per node, and counts admissions per key and phase, and replies by kind.
type unreachLoad struct {
	mu       sync.Mutex // guards the fields below
	phase    int        // 0 before the cut, 1 during it, 2 after the heal; a pipeline counts in the one it was sent in
	admitted [3]map[string]int
	replies  [3]map[string]int
	// full holds the keys denied before the cut: at their limit by their
	// owner's count, though the load may have counted fewer admissions (a
	// reply lost to an error after the owner admitted, as a forward's
	// timeout on a starved host).
	full map[string]bool
	// unknown counts, per key, the requests sent before the cut that got
	// an error: the owner may have admitted them.
	unknown map[string]int
	rounds  []int // rounds each client ended
}

func newUnreachLoad() *unreachLoad {
	l := &unreachLoad{full: map[string]bool{}, unknown: map[string]int{}}
	for i := range l.admitted {
		l.admitted[i], l.replies[i] = map[string]int{}, map[string]int{}
	}
	return l
}

func (l *unreachLoad) setPhase(p int) {
	l.mu.Lock()
	l.phase = p
	l.mu.Unlock()
}

func (l *unreachLoad) run(cs []*redis.Client, keys []string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	ctx := context.Background()
	l.mu.Lock()
	l.rounds = make([]int, len(cs))
	l.mu.Unlock()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(unreachRound)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				// The phase the pipeline is sent in, not the one its
				// replies come back in: in one CI run (1of3/deny) a
				// pipeline sent before the cut, slow behind its forwards,
				// brought 50 admissions back after it, counted as the
				// cut's on top of keys another client had seen denied
				// (full): factor 1.04, though no node admitted a key above
				// its limit.
				l.mu.Lock()
				phase := l.phase
				l.mu.Unlock()
				cmds, _ := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, k := range keys {
						p.Do(ctx, "RL.SLIDE", k, unreachLimit, 3600)
					}
					return nil
				})
				l.count(phase, keys, cmds)
				l.mu.Lock()
				l.rounds[i]++
				l.mu.Unlock()
			}
		}()
	}
	return &wg
}

func (l *unreachLoad) count(phase int, keys []string, cmds []redis.Cmder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, cmd := range cmds {
		rep, err := cmd.(*redis.Cmd).Int64Slice()
		switch {
		case err != nil:
			l.replies[phase][firstWord(err.Error())]++
			if phase == 0 {
				l.unknown[keys[i]]++
			}
		case rep[0] == 1:
			l.admitted[phase][keys[i]]++
			l.replies[phase]["admitted"]++
		default:
			l.replies[phase]["denied"]++
			if phase == 0 {
				l.full[keys[i]] = true
			}
		}
	}
}

// waitRounds waits until d has passed and every client has ended n more
// rounds: a round of a node cut off from some owners waits for
// --cluster-timeout (1 s) on their forwards, or longer, so rounds alone
// would make the cut last as long as the slowest node's.
func (l *unreachLoad) waitRounds(t *testing.T, d time.Duration, n int) {
	t.Helper()
	l.mu.Lock()
	from := slices.Clone(l.rounds)
	l.mu.Unlock()
	start := time.Now()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, r := range l.rounds {
			if r < from[i]+n {
				return false
			}
		}
		return time.Since(start) >= d
	}, deadline, 10*time.Millisecond, "%v and %d more rounds of every client", d, n)
}

// unreachSettled waits until the cut has taken its whole effect: with a
// majority side, its nodes count only each other and serve every slot
// they own, the cut-off nodes' too (detection, its confirmation, the
// takeover's wait); with none (2/2), every node has lost its lease. Its
// clients are its own: the load's have a pool of one.
func unreachSettled(t *testing.T, ips []string, side map[int]bool) {
	t.Helper()
	var majority []int
	for i := range ips {
		if !side[i] {
			majority = append(majority, i)
		}
	}
	if 2*len(majority) <= len(ips) {
		majority = nil
	}
	for i, ip := range ips {
		c := redis.NewClient(&redis.Options{Addr: ip + ":6379", Password: unreachPassword, Protocol: 2, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		want := []*regexp.Regexp{regexp.MustCompile(`rl_cluster_quorum:0\r\n`)} // no majority: every node lost its lease
		if slices.Contains(majority, i) {
			want = []*regexp.Regexp{regexp.MustCompile(`rl_cluster_quorum:1\r\n`), regexp.MustCompile(`rl_cluster_takeover_slots_waiting:0\r\n`),
				regexp.MustCompile(fmt.Sprintf(`rl_cluster_owners:%d\r\n`, len(majority)))}
		} else if majority != nil {
			continue // the cut-off node: the majority takes its slots over only once its lease has run out
		}
		require.Eventually(t, func() bool {
			info, err := c.Info(context.Background(), "cluster").Result()
			return err == nil && matchesAll(info, want)
		}, deadline, 50*time.Millisecond, "node %d: the cut takes its whole effect", i)
	}
}

// usedUp reports whether every key is at its limit before the cut: it
// admitted the limit, or its owner denied it.
func (l *unreachLoad) usedUp(keys []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !slices.ContainsFunc(keys, func(k string) bool { return l.admitted[0][k] < unreachLimit && !l.full[k] })
}

// deniedShort counts, once the load has stopped, the keys denied before
// the cut with fewer admissions counted before it than the limit, and of
// those the ones denied below it: short by more than their requests
// before the cut that got an error. It returns them with the replies
// before the cut.
func (l *unreachLoad) deniedShort(keys []string) (denied, below int, replies map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if seen := l.admitted[0][k]; l.full[k] && seen < unreachLimit {
			denied++
			if seen+l.unknown[k] < unreachLimit {
				below++
			}
		}
	}
	return denied, below, maps.Clone(l.replies[0])
}

// logShort logs deniedShort's counts, if any key was denied short.
func (l *unreachLoad) logShort(t *testing.T, keys []string) {
	t.Helper()
	if denied, below, replies := l.deniedShort(keys); denied > 0 {
		t.Logf("%d keys denied before the cut short of their limit, counted with their unanswered requests before it; %d of them denied below it; replies before the cut: %v",
			denied, below, replies)
	}
}

// factors are the most admissions of one key divided by the limit, up to
// the heal and over the whole run. A key denied before the cut counts, of
// the admissions before it the load did not see, at most its requests
// before the cut that got an error, up to its limit: every admission the
// owner still owed it is within the limit, and every one after that is
// above it. (It counted its whole limit before, as TestRedPauseNearDetection's
// load did until 108e751: a key its owner denied below the limit would
// read its later admissions as above it.) The load has stopped: every
// reply before the cut has come.
func (l *unreachLoad) factors(keys []string) (cut, all float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mostCut, mostAll := 0, 0
	for _, k := range keys {
		before := l.admitted[0][k]
		if l.full[k] && before < unreachLimit {
			before += min(unreachLimit-before, l.unknown[k])
		}
		upToHeal := before + l.admitted[1][k]
		mostCut = max(mostCut, upToHeal)
		mostAll = max(mostAll, upToHeal+l.admitted[2][k])
	}
	return float64(mostCut) / unreachLimit, float64(mostAll) / unreachLimit
}

// unreachFull reports whether RL_UNREACH_FULL asks for the whole
// measurement of docs/cluster.md's table: the 6 s after the heal (the
// factor in brackets) and `allow` through the 2/2 cut. Both are logged
// only, never asserted, so CI runs without them (about 70 s of it).
func unreachFull() bool { return os.Getenv("RL_UNREACH_FULL") != "" }

// unreachRun starts len(ips) nodes with mode, uses every key up, and cuts
// side from the rest until the cut has taken its whole effect
// (unreachSettled), then unreachAfter and two more rounds of every client.
// With RL_UNREACH_FULL, as docs/cluster.md measured, the cut lasts
// unreachHold instead; then it heals and runs on for 6 s, for the whole
// run's factor (all). Without, all is the factor up to the heal.
func unreachRun(t *testing.T, nodes int, side map[int]bool, mode string) (cut, all float64, during map[string]int) {
	ips := setupUnreachNet(t, nodes)
	cs := startUnreachNodes(t, ips, mode)
	var keys []string
	for i := range unreachKeys {
		keys = append(keys, fmt.Sprint("unreach:", i))
	}
	l := newUnreachLoad()
	stop := make(chan struct{})
	wg := l.run(cs, keys, stop)
	// Used up by the owners' counts, not the load's alone: in one CI run
	// (2of4/error) some key's counted admissions stayed below the limit
	// for the last 23 s of the 30, while no node logged a down reply: an
	// owner that admitted a request whose reply the load lost (an error
	// after the decision) denies the key from then on.
	if !assert.Eventually(t, func() bool { return l.usedUp(keys) }, 30*time.Second, 50*time.Millisecond, "every key used up before the cut") {
		close(stop)
		wg.Wait()
		t.Fatalf("replies before the cut: %v", l.replies[0])
	}
	// Let the owners ship the last admissions to their backups (every
	// --replica-interval, 100 ms) before the cut: what an owner decided
	// after its last shipment is the replicas' documented loss, not the
	// mode's doing, and this test measures the mode. Cut right after the
	// last admission, a key took two more once (factor 1.04 under deny).
	time.Sleep(5 * server.DefaultReplicaInterval)
	unreachCut(t, ips, side, true)
	l.setPhase(1)
	cutAt := time.Now()
	if !unreachFull() {
		unreachSettled(t, ips, side)
		settled := time.Since(cutAt)
		l.waitRounds(t, unreachAfter, 2)
		close(stop)
		wg.Wait()
		l.logShort(t, keys)
		cut, all = l.factors(keys)
		t.Logf("--owner-unreachable %s, %d nodes, %v cut off (in effect after %v) for %v: factor %.2f (RL_UNREACH_FULL=1 cuts for %v, heals and runs on); replies during the cut %v",
			mode, nodes, side, settled.Round(time.Millisecond), time.Since(cutAt).Round(time.Millisecond), cut, unreachHold, l.replies[1])
		return cut, all, l.replies[1]
	}
	require.Eventually(t, func() bool { return time.Since(cutAt) >= unreachHold }, 2*unreachHold, 50*time.Millisecond)
	unreachCut(t, ips, side, false)
	l.setPhase(2)
	healAt := time.Now()
	require.Eventually(t, func() bool { return time.Since(healAt) >= 6*time.Second }, 12*time.Second, 50*time.Millisecond)
	close(stop)
	wg.Wait()
	l.logShort(t, keys)
	cut, all = l.factors(keys)
	t.Logf("--owner-unreachable %s, %d nodes, %v cut off for %v: factor %.2f up to the heal, %.2f with 6 s after it; replies during the cut %v, after %v",
		mode, nodes, side, unreachHold, cut, all, l.replies[1], l.replies[2])
	return cut, all, l.replies[1]
}

// TestOwnerUnreachableFactors measures each --owner-unreachable mode
// through a 1/3 and a 2/2 cut (docs/cluster.md, "--owner-unreachable when
// a node may not serve"), and holds each to its documented bound up to
// the heal: error and deny never above the limit; local at most one limit
// per side of the cut (each side decides each key at one node, the slot's
// substitute, and the side that holds the key's state adds nothing to it,
// so the worst key reaches one limit per side); allow none (it fails open).
// The whole run's factor, heal included, is logged, not asserted: a 2/2
// heal over-admitted now and then (TestSplitTwoOfFour now asserts it does not).
// So the heal, and allow through the 2/2 cut (a measurement, asserting
// nothing), run only with RL_UNREACH_FULL=1; allow through the 1/3 cut
// runs always, so that the mode's path runs under -race.
func TestOwnerUnreachableFactors(t *testing.T) {
	needNetns(t, "ip", "iptables")
	cuts := []struct {
		name  string
		nodes int
		side  map[int]bool
	}{
		{"1of3", 3, map[int]bool{2: true}},
		{"2of4", 4, map[int]bool{2: true, 3: true}},
	}
	for _, c := range cuts {
		for _, mode := range []string{"error", "deny", "local", "allow"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				if mode == "allow" && c.name == "2of4" && !unreachFull() {
					t.Skip("a measurement only (allow asserts no bound); RL_UNREACH_FULL=1 runs it")
				}
				cut, _, during := unreachRun(t, c.nodes, c.side, mode)
				switch mode {
				case "error":
					assert.LessOrEqual(t, cut, 1.0, "a key admitted above its limit")
					assert.Positive(t, during["CLUSTERDOWN"], "nodes without a lease answer CLUSTERDOWN")
				case "deny":
					assert.LessOrEqual(t, cut, 1.0, "a key admitted above its limit")
				case "local":
					assert.LessOrEqual(t, cut, float64(unreachSides), "local: more than one limit per side of the cut")
				}
			})
		}
	}
}
