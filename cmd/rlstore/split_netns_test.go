package main

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/rlstore/rlstore/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The split tests run nodes in network namespaces rlq0, rlq1, ... whose
// veths hang on a bridge rlqbr in this test's own namespace, on
// 10.231.27.0/24 (the bridge is .254, node i is .i+1), so the test's
// clients reach every node while iptables DROP inside the namespaces cuts
// the nodes from each other. Root only; everything is removed afterwards.
const (
	splitNet      = "10.231.27."
	splitBridge   = "rlqbr"
	splitPassword = "rlq-test-password"
	splitKey      = "cmxxLXRlc3Qta2V5LTAxMjM0NTY3ODlhYmNkZWYwMTI=" // 32 bytes
	splitLimit    = 20
)

func splitCleanup(n int) {
	for i := range n {
		_ = exec.Command("ip", "netns", "del", fmt.Sprintf("rlq%d", i)).Run()
		_ = exec.Command("ip", "link", "del", fmt.Sprintf("rlqp%d", i)).Run() // gone with its namespace, unless a process kept that alive
	}
	_ = exec.Command("ip", "link", "del", splitBridge).Run()
}

// setupSplitNet makes the bridge and n namespaces.
func setupSplitNet(t *testing.T, n int) []string {
	t.Helper()
	needNetns(t, "ip", "iptables")
	splitCleanup(8) // what a killed earlier run left
	t.Cleanup(func() { splitCleanup(n) })
	netnsRun(t, "ip", "link", "add", splitBridge, "type", "bridge")
	netnsRun(t, "ip", "addr", "add", splitNet+"254/24", "dev", splitBridge)
	netnsRun(t, "ip", "link", "set", splitBridge, "up")
	var ips []string
	for i := range n {
		ns, veth, port := fmt.Sprintf("rlq%d", i), fmt.Sprintf("rlqv%d", i), fmt.Sprintf("rlqp%d", i)
		ip := fmt.Sprintf("%s%d", splitNet, i+1)
		netnsRun(t, "ip", "netns", "add", ns)
		netnsRun(t, "ip", "link", "add", "name", veth, "netns", ns, "type", "veth", "peer", "name", port)
		netnsRun(t, "ip", "link", "set", port, "master", splitBridge, "up")
		netnsRun(t, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", veth)
		netnsRun(t, "ip", "-n", ns, "link", "set", veth, "up")
		netnsRun(t, "ip", "-n", ns, "link", "set", "lo", "up")
		ips = append(ips, ip)
	}
	return ips
}

// startSplitNodes starts a node in each namespace, every one joining all.
func startSplitNodes(t *testing.T, ips []string) []*redis.Client {
	t.Helper()
	var seeds string
	for i, ip := range ips {
		if i > 0 {
			seeds += ","
		}
		seeds += ip + ":7946"
	}
	var cs []*redis.Client
	for i, ip := range ips {
		p := rlstoretest.Start(t, "ip", []string{"RLSTORE_REQUIREPASS=" + splitPassword},
			"netns", "exec", fmt.Sprintf("rlq%d", i), rlstoreBin, "--bind", ip, "--port", "6379",
			"--node-name", fmt.Sprintf("q%d-%d", len(ips), i), "--cluster-addr", ip+":7946", "--join", seeds,
			"--cluster-key", splitKey)
		p.Addr(t)
		c := redis.NewClient(&redis.Options{Addr: ip + ":6379", Password: splitPassword, Protocol: 2,
			MaxRetries: -1, ReadTimeout: 2 * time.Second})
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

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// cut drops, inside each namespace of side, every packet to or from the
// nodes not in side: the clients on the bridge still reach every node.
// Every namespace's rules go in at once, one shell each, all namespaces
// side by side: one command per rule took seconds on a loaded host, a
// partition that is not clean for that long (outside docs/cluster.md's
// assumptions).
func cut(t *testing.T, ips []string, side map[int]bool, on bool) {
	t.Helper()
	op := "-A"
	if !on {
		op = "-D"
	}
	errs := make([]error, len(ips))
	var wg sync.WaitGroup
	for a := range ips {
		var script []string
		for b := range ips {
			if side[a] != side[b] {
				script = append(script, fmt.Sprintf("iptables %s INPUT -s %s -j DROP && iptables %s OUTPUT -d %s -j DROP", op, ips[b], op, ips[b]))
			}
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

// splitLoad asks every node about every key each round, counting the
// admissions per key and the replies by kind.
type splitLoad struct {
	mu       sync.Mutex
	admitted map[string]int
	replies  map[string]int
	start    time.Time
	when     map[string][]string // key → "node@seconds" of each admission, for a failure's log
	rounds   []int               // rounds each client ended
	// full holds, while waitUsedUp waits (nil otherwise), the keys denied:
	// at their limit by their owner's count, however many admissions the
	// load counted.
	full map[string]bool
	// unknown counts, per key, the requests that got an error: the owner
	// may have admitted them (a lost reply, or a forward that timed out
	// after the owner decided, answered -CLUSTERDOWN).
	unknown map[string]int
	// busy is, per client, the key of its request in flight ("" for
	// none), and answered the requests it has had a reply or an error
	// for: waitUsedUp waits for the replies in flight when it counts.
	busy     []string
	answered []int
	// awaiting is, while waitUsedUp waits for the replies in flight, the
	// clients it waits for (nil otherwise).
	awaiting map[int]int
	// early counts, per key, the denials that came while waitUsedUp
	// waited and the load had seen fewer admissions than the limit.
	early map[string]int
	// counts holds, per key, the owner's count after each admission
	// (the limit less its remaining), from run until waitUsedUp ends.
	counts map[string][]int64
}

func (l *splitLoad) run(ctx context.Context, cs []*redis.Client, keys []string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	l.mu.Lock()
	l.rounds = make([]int, len(cs))
	l.busy, l.answered = make([]string, len(cs)), make([]int, len(cs))
	l.counts = map[string][]int64{}
	l.mu.Unlock()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				for _, k := range keys {
					if closed(stop) { // a round through a node that waits out read timeouts takes a minute
						return
					}
					l.mu.Lock()
					l.busy[i] = k
					l.mu.Unlock()
					rep, err := c.Do(ctx, "RL.SLIDE", k, splitLimit, 3600).Int64Slice()
					l.mu.Lock()
					l.busy[i] = ""
					l.answered[i]++
					switch {
					case err != nil:
						l.replies[firstWord(err.Error())]++
						if l.unknown == nil {
							l.unknown = map[string]int{}
						}
						l.unknown[k]++
					case rep[0] == 1:
						l.admitted[k]++
						// remaining after it: the owner's count of the key (rep[2])
						l.when[k] = append(l.when[k], fmt.Sprintf("%d@%.2f/%d", i, time.Since(l.start).Seconds(), rep[2]))
						if l.counts != nil {
							l.counts[k] = append(l.counts[k], splitLimit-rep[2])
						}
						l.replies["admitted"]++
					default:
						l.replies["denied"]++
						if l.full != nil {
							l.full[k] = true
							if l.admitted[k] < splitLimit {
								l.early[k]++
							}
						}
					}
					l.mu.Unlock()
				}
				l.mu.Lock()
				l.rounds[i]++
				l.mu.Unlock()
			}
		}()
	}
	return &wg
}

// waitUsedUp waits until every key has admitted its limit, then five
// --replica-intervals, so that the owners' last admissions reach their
// backups: what an owner decided after its last shipment is the replicas'
// documented loss, not what these tests measure. (It replaces a fixed 2 s
// of load.)
//
// A key its owner denies is used up too: in CI's run of 69eaadb
// TestRedPauseNearDetection/2.5s waited out its deadline on "every key used
// up" (the owner-unreachable tests did once too). Such a key counts, from
// then on, the admissions the load has not seen, so that every admission
// after is above the limit, as for the others. It first waits for the
// replies in flight: a client's request the owner admitted before another
// client's was denied may bring its reply after that denial's. Counted
// before it came, it read as an admission above the limit (CI's run of
// 7ae9e6a: "21 of 20", the 20th admission's reply 10 ms after the
// denial's). Then the admissions not seen are at most the key's requests
// that got an error (a lost reply, or a forward that timed out after the
// owner decided); a key denied short by more was denied below its limit
// by its owner's count (or a request counted twice), which the log says.
func (l *splitLoad) waitUsedUp(t *testing.T, keys []string) {
	t.Helper()
	l.mu.Lock()
	l.full, l.early = map[string]bool{}, map[string]int{}
	l.mu.Unlock()
	short := func() []string { // the caller holds l.mu
		var out []string
		for _, k := range keys {
			if l.admitted[k] < splitLimit && !l.full[k] {
				out = append(out, fmt.Sprintf("%s:%d", k, l.admitted[k]))
			}
		}
		return out
	}
	if !assert.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(short()) == 0
	}, deadline, 10*time.Millisecond, "every key used up") {
		l.mu.Lock()
		defer l.mu.Unlock()
		s := short()
		t.Fatalf("%d keys short of their limit %d after %v (the first: %v); replies %v; rounds ended per client %v",
			len(s), splitLimit, time.Since(l.start).Round(time.Millisecond), s[:min(len(s), 8)], l.replies, l.rounds)
	}
	inFlight := l.waitInFlight(t, keys)
	l.mu.Lock()
	denied, below, overtaken := 0, 0, 0
	for _, k := range keys {
		if l.early[k] > 0 && l.admitted[k] == splitLimit {
			overtaken++ // a denial's reply came before that of an admission its owner decided first
		}
		if l.full[k] && l.admitted[k] < splitLimit {
			n := min(splitLimit-l.admitted[k], l.unknown[k])
			if n < splitLimit-l.admitted[k] {
				below++
			}
			denied++
			l.when[k] = append(l.when[k], fmt.Sprintf("denied at %d, +%d unanswered@%.2f", l.admitted[k], n, time.Since(l.start).Seconds()))
			l.admitted[k] += n
		}
	}
	hidden, twice := l.ownerCountsLocked(keys)
	l.full, l.counts = nil, nil
	replies := maps.Clone(l.replies)
	l.mu.Unlock()
	t.Logf("set-up, by the owners' counts: %d keys counted an admission that no reply or error of the load accounts for (a request counted twice); "+
		"%d keys had two admissions of the same count (two nodes deciding from one state)", hidden, twice)
	if denied > 0 || overtaken > 0 {
		t.Logf("%d keys had a denial before the reply of their last admission (%d of them in flight when every key was used up); "+
			"%d keys denied short of their limit, counted with their unanswered requests; %d of them denied below it; replies: %v",
			overtaken, inFlight, denied, below, replies)
	}
	time.Sleep(5 * server.DefaultReplicaInterval) // the product's ship period, not an ordering
}

// ownerCountsLocked checks each key's admissions against its owner's
// counts: hidden is the keys whose counts skip one though no request of
// theirs got an error, twice those with two admissions of the same count
// (two nodes decided from one state). The caller holds l.mu.
func (l *splitLoad) ownerCountsLocked(keys []string) (hidden, twice int) {
	for _, k := range keys {
		cs := slices.Clone(l.counts[k])
		slices.Sort(cs)
		if len(slices.Compact(slices.Clone(cs))) < len(cs) {
			twice++
		}
		if len(cs) > 0 && cs[len(cs)-1] > int64(len(slices.Compact(cs))) && l.unknown[k] == 0 {
			hidden++
		}
	}
	return hidden, twice
}

// waitInFlight waits until every client has had the reply, or an error,
// for the request it had in flight, and returns how many of keys were
// denied short of their limit while one of theirs was.
func (l *splitLoad) waitInFlight(t *testing.T, keys []string) int {
	t.Helper()
	l.mu.Lock()
	l.awaiting = map[int]int{}
	for i, k := range l.busy {
		if k != "" {
			l.awaiting[i] = l.answered[i]
		}
	}
	n := 0
	for _, k := range keys {
		if l.full[k] && l.admitted[k] < splitLimit && slices.Contains(l.busy, k) {
			n++
		}
	}
	l.mu.Unlock()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, was := range l.awaiting {
			if l.answered[i] == was {
				return false
			}
		}
		return true
	}, deadline, 5*time.Millisecond, "the replies in flight")
	l.mu.Lock()
	l.awaiting = nil
	l.mu.Unlock()
	return n
}

// waitRounds waits until each client of the load (by its index in run's
// cs; every client when none is given) has ended n more rounds, each
// asking its node about every key.
func (l *splitLoad) waitRounds(t *testing.T, n int, clients ...int) {
	t.Helper()
	l.mu.Lock()
	from := slices.Clone(l.rounds)
	l.mu.Unlock()
	if len(clients) == 0 {
		for i := range from {
			clients = append(clients, i)
		}
	}
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, i := range clients {
			if l.rounds[i] < from[i]+n {
				return false
			}
		}
		return true
	}, deadline, 10*time.Millisecond, "%d more rounds of clients %v", n, clients)
}

// healedInfo: a node holds its lease, and no slot of it waits for a
// takeover, is lost, or moves in or out.
var healedInfo = []*regexp.Regexp{
	regexp.MustCompile(`rl_cluster_quorum:1\r\n`),
	regexp.MustCompile(`rl_cluster_takeover_slots_waiting:0\r\n`),
	regexp.MustCompile(`rl_cluster_lost_slots:0\r\n`),
	regexp.MustCompile(`rl_cluster_handoff_slots_importing:0\r\n`),
	regexp.MustCompile(`rl_cluster_handoff_slots_migrating:0\r\n`),
}

// healedBy waits until every node sees all len(cs) members, holds its
// lease, and serves every slot it owns with none moving (the heal is
// over), or until most has passed since the heal, as the fixed wait these
// tests had: a heal may leave slots lost or importing far longer (a 3/2
// heal did, past 30 s), and the tests' bound is on admissions, not on
// how soon the heal ends. It reports whether the heal ended.
func healedBy(t *testing.T, cs []*redis.Client, most time.Duration) bool {
	t.Helper()
	return settledBy(t, cs, len(cs), healedInfo, most)
}

// settledBy waits until each node behind cs sees owners members and its
// INFO cluster matches every one of want, or until most has passed; it
// reports whether they all did.
func settledBy(t *testing.T, cs []*redis.Client, owners int, want []*regexp.Regexp, most time.Duration) bool {
	t.Helper()
	size := fmt.Sprintf("cluster_size:%d\r\n", owners)
	until := time.Now().Add(most)
	for _, c := range cs {
		for {
			if nodeMatches(c, size, want) {
				break
			}
			if time.Now().After(until) {
				t.Logf("not every node sees %d owners and matches %v after %v: going on, as the fixed wait did", owners, want, most)
				return false
			}
			time.Sleep(50 * time.Millisecond) // a poll's period
		}
	}
	return true
}

// nodeMatches reports whether the node behind c holds its lease, has
// size in CLUSTER INFO and matches every one of want in INFO cluster.
func nodeMatches(c *redis.Client, size string, want []*regexp.Regexp) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ci, err := c.ClusterInfo(ctx).Result()
	if err != nil || !contains(ci, size) || !contains(ci, "cluster_state:ok") {
		return false
	}
	info, err := c.Info(ctx, "cluster").Result()
	return err == nil && matchesAll(info, want)
}

// matchesAll reports whether every one of want matches info.
func matchesAll(info string, want []*regexp.Regexp) bool {
	for _, re := range want {
		if !re.MatchString(info) {
			return false
		}
	}
	return true
}

// closed reports whether stop is closed.
func closed(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// splitRun starts len(ips) nodes, uses every key up, splits side from the
// rest for hold, heals, and runs on; it returns the most admissions of
// one key over the whole run, and what the clients were answered.
func splitRun(t *testing.T, nodes int, side map[int]bool, hold time.Duration) (int, map[string]int) {
	ips := setupSplitNet(t, nodes)
	cs := startSplitNodes(t, ips)
	var keys []string
	for i := range 30 {
		keys = append(keys, fmt.Sprint("split:", i))
	}
	l := &splitLoad{admitted: map[string]int{}, replies: map[string]int{}, start: time.Now(), when: map[string][]string{}}
	cl := newCountLoad(l.start)
	var ck []string // counting keys: counted through the whole run (see countsKept)
	for _, k := range keys {
		ck = append(ck, "count:"+k)
	}
	stop := make(chan struct{})
	wg := l.run(context.Background(), cs, keys, stop)
	cwg := cl.run(context.Background(), cs, ck, stop)
	l.waitUsedUp(t, keys)
	cut(t, ips, side, true)
	split := time.Since(l.start)
	time.Sleep(hold) // the split lasts this long, under load: its length is the subject
	// No side of these splits holds a majority: it must say so by now.
	for i := range side {
		info, err := cs[i].ClusterInfo(context.Background()).Result()
		if assert.NoError(t, err) {
			assert.Contains(t, info, "cluster_state:fail\r\n", "node %d, cut off from a majority, says so", i)
		}
	}
	cut(t, ips, side, false)
	healed := time.Since(l.start)
	// The heal: the nodes find each other again and hand slots back, for
	// at most the 6 s these tests waited before; then every client asks
	// about every key three more times, from the state the heal left.
	healedBy(t, cs, 6*time.Second)
	settled := time.Since(l.start)
	l.waitRounds(t, 3)
	close(stop)
	wg.Wait()
	cwg.Wait()
	cl.report(t, cs[0], ck)
	countsKept(t, cl, cs[0], ck, side, split, healed)
	most := 0
	for _, k := range keys {
		most = max(most, l.admitted[k])
		if l.admitted[k] > splitLimit {
			t.Logf("%s (slot %d) admitted %d times (split at %.2fs, heal at %.2fs), by client of node@seconds: %v",
				k, cluster.Slot([]byte(k)), l.admitted[k], split.Seconds(), healed.Seconds(), l.when[k])
		}
	}
	t.Logf("%d nodes, %v cut off for %v: most admissions of one key %d (limit %d); healed at %.2fs, settled at %.2fs, ended at %.2fs; replies %v",
		nodes, side, hold, most, splitLimit, healed.Seconds(), settled.Seconds(), time.Since(l.start).Seconds(), l.replies)
	return most, l.replies
}

// TestSplitOneOfThree is finding 1 of issue 27: a node cut off from the
// other two used to serve every slot with fresh quotas (factor 1.3 to
// 1.5). Now it stops serving within its lease, and the majority waits for
// that before it serves the node's slots.
func TestSplitOneOfThree(t *testing.T) {
	most, replies := splitRun(t, 3, map[int]bool{2: true}, 8*time.Second)
	assert.LessOrEqual(t, most, splitLimit, "a key admitted above its limit through the split and its heal")
	assert.Positive(t, replies["CLUSTERDOWN"], "the node cut off stops serving")
}

// TestSplitTwoOfFour: a 2/2 split has no majority: both sides stop, and
// the heal resets nothing (finding 2).
func TestSplitTwoOfFour(t *testing.T) {
	most, _ := splitRun(t, 4, map[int]bool{2: true, 3: true}, 6*time.Second)
	assert.LessOrEqual(t, most, splitLimit, "a key admitted above its limit through the split and its heal")
}

// TestSplitTwoOfFive: 3/2, with heal (finding 2: the minority used to hand
// slots back in replace mode and reset the majority's keys). Five of the
// thirty keys have their owner and backup both in the minority: the
// majority used to serve them from nothing after the takeover's wait (40
// of 20 each, every run); now they are lost there until the heal
// (server/internal/handoff/lost.go). And an import that timed out into serving while its
// old owner still served the slot admitted one key twice in about one
// heal of four; now an import ends only with DONE, a death or RELEASED.
func TestSplitTwoOfFive(t *testing.T) {
	most, _ := splitRun(t, 5, map[int]bool{3: true, 4: true}, 6*time.Second)
	assert.LessOrEqual(t, most, splitLimit, "a key admitted above its limit through the split and its heal")
}

// countsKept asserts "heal merges, never resets" (docs/cluster.md,
// Safety) on the counting keys: each key's final count, read through c,
// lacks at most the documented losses, which are those of a takeover
// from copies (a crash or a stop: what the owner decided after the last
// shipment its backup holds). A split makes two such losses: a node of
// side (cut off) serves what it owns until its lease runs out, and the
// majority then takes those slots over from copies that lack what it
// decided after the cut; and what any node decided in the shipment
// before the cut (redShipmentLoss). So a key may lack its admissions by
// clients of side between the split and the heal, and redShipmentLoss;
// anything more is a count that decreased at the heal. Before, no split
// test had counting keys (issue 27's 7.8% of acknowledged counting units
// lost at the heal was asserted nowhere).
func countsKept(t *testing.T, l *countLoad, c *redis.Client, keys []string, side map[int]bool, split, healed time.Duration) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		rep, err := c.Do(context.Background(), "RL.SLIDE", k, countLimit, 3600, "PEEK").Int64Slice()
		if err != nil {
			t.Logf("counting key %s: no final count (%v): a slot still down is no count decreased", k, err)
			continue
		}
		final := countLimit - int(rep[2]) - 1 // a peek's remaining is what would remain after it
		cutOff := 0                           // admitted by side's clients while it was cut off
		for _, by := range l.seen[k] {
			for _, w := range by {
				var node int
				var at float64
				if _, err := fmt.Sscanf(w, "%d@%g", &node, &at); err == nil && side[node] && at >= split.Seconds() && at <= healed.Seconds() {
					cutOff++
				}
			}
		}
		assert.LessOrEqual(t, l.admits[k]-final, cutOff+redShipmentLoss,
			"counting key %s: %d admitted, final count %d: it lost more than the cut-off side decided (%d) and a shipment's decisions (%d)",
			k, l.admits[k], final, cutOff, redShipmentLoss)
	}
}
