package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterProcessLeasesFailover: 3 processes with --replicas 1, leases
// and reservations on keys that p1 owns, kill -9 of p1. After the failover
// what docs/commands.md promises holds on the new owners: every lease and
// reservation that reached a backup is there, each releases, commits or
// cancels once; a lease swapped for another just before the kill comes
// back as one of the two, never both, so no key holds more than its
// limit; a commit retried after the kill (an ambiguous timeout) ends in
// the same budget whether or not the first reached the backup; and leases
// taken under load lose at most about one --replica-interval of the
// newest.
func TestClusterProcessLeasesFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node kill -9 under load: not in -short")
	}
	ps := startClusterProcs(t, 3, "--replicas", "1", "--replica-interval", replicaIv.String())
	tb := procTable(t, 3)
	ofP1 := func(s int) bool { return tb.Owner(s).Name == "p1" }
	backedBy := func(b string) func(int) bool {
		return func(s int) bool { r, _ := tb.RunnerUp(s); return ofP1(s) && r.Name == b }
	}
	f := &leaseFailover{
		pools: keysWhere(20, "pool:", ofP1), swaps: keysWhere(20, "swap:", ofP1),
		budgets: keysWhere(10, "llm:", ofP1), late: keysWhere(10, "late:", ofP1), policed: keysWhere(5, "pol:", ofP1),
		load: &leaseLoad{keys: keysWhere(40, "c:", ofP1), admitted: map[string]int{}},
	}
	f.load.pools = f.pools
	ctx := context.Background()
	c0 := newClient(t, ps[0].addr)
	require.NoError(t, c0.Do(ctx, "RL.POLICY", "SET", "up", "FIXED", 10_000_000, "1h", "TOKEN", 10_000_000, 10_000_000, "1h").Err())
	for _, p := range ps {
		c := newClient(t, p.addr)
		require.Eventually(t, func() bool { return c.Do(ctx, "RL.POLICY", "GET", "up").Err() == nil }, deadline, 10*time.Millisecond,
			"%s has the policy", p.name)
	}
	f.setUp(ctx, t, c0)
	// A marker per backup, written last: once both backups hold them, they
	// hold everything written before.
	markers := append(keysWhere(1, "m0:", backedBy("p0")), keysWhere(1, "m2:", backedBy("p2"))...)
	for _, k := range markers {
		require.Equal(t, int64(1), must(c0.Do(ctx, "RL.ACQUIRE", k, 1, "1h").Slice())[0])
	}
	keys := len(f.pools) + len(f.swaps) + 2*len(f.budgets) + 2*len(f.late) + len(markers) + // a budget and its ledger
		3*len(f.policed) // two rules and the policy's ledger
	waitCopies(t, keys, ps[0], ps[2])

	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); f.load.run(ctx, c0, stop) }()
	require.Eventually(t, func() bool { return f.load.roundsDone() >= 10 }, deadline, 10*time.Millisecond)
	time.Sleep(3 * replicaIv) // the load runs for a few intervals: not an ordering, a duration of the scenario
	close(stop)
	<-done
	require.NoError(t, f.load.err, "the load before the kill")
	f.lastWrites(ctx, t, c0)
	killing := time.Now()
	ps[1].Kill()
	f.load.bound = f.load.ends.lossBound(killing, time.Now())
	waitDeath(t, ps[0], ps[2])

	f.checkPools(ctx, t, c0)
	f.checkBudgets(ctx, t, c0)
	f.checkPoliced(ctx, t, c0)
	f.checkLoad(ctx, t, c0)
}

// leaseFailover is the state of TestClusterProcessLeasesFailover: pools
// filled to their limit of 3 (w0, w1, w2), swaps as pools whose w0 is
// released and n0 taken just before the kill, budgets (FIXED 100 a 1h
// window) with reservations r1 and r2 of 30 each, late budgets whose r1
// commits just before the kill, and the load's keys.
type leaseFailover struct {
	pools, swaps, budgets, late []string
	policed                     []string // a reservation u1 of 3,000,000 (above 2^20) against policy up
	load                        *leaseLoad
}

func (f *leaseFailover) setUp(ctx context.Context, t *testing.T, c *redis.Client) {
	pipe := c.Pipeline()
	var acq []*redis.Cmd
	for _, k := range append(append([]string(nil), f.pools...), f.swaps...) {
		for i := range 3 {
			acq = append(acq, pipe.Do(ctx, "RL.ACQUIRE", k, 3, "1h", "ID", fmt.Sprint("w", i)))
		}
	}
	for _, k := range append(append([]string(nil), f.budgets...), f.late...) {
		for _, id := range []string{"r1", "r2"} {
			acq = append(acq, pipe.Do(ctx, "RL.RESERVE", k, "FIXED", 100, "1h", "COST", 30, "TTL", "1h", "ID", id))
		}
	}
	for _, k := range f.policed {
		acq = append(acq, pipe.Do(ctx, "RL.RESERVE", k, "POLICY", "up", "COST", 3_000_000, "TTL", "1h", "ID", "u1"))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	for _, cmd := range acq {
		require.Equal(t, int64(1), must(cmd.Slice())[0], "%v", cmd.Args())
	}
}

// checkPoliced: a reservation against a policy's rules, of an estimate
// above 2^20, is outstanding once on the new owner, and commits once on
// every rule.
func (f *leaseFailover) checkPoliced(ctx context.Context, t *testing.T, c *redis.Client) {
	for _, k := range f.policed {
		v := answer(t, c, "RL.RESERVE", k, "POLICY", "up", "COST", 3_000_000, "TTL", "1h", "ID", "u1").([]any)
		assert.Equal(t, int64(1), v[0], "%s: u1 is outstanding, a retried reserve is admitted", k)
		assert.Equal(t, int64(1), answer(t, c, "RL.COMMIT", k, "u1", "ACTUAL", 1_000_000, "POLICY", "up"), "%s u1 commits once", k)
		assert.Equal(t, int64(0), answer(t, c, "RL.COMMIT", k, "u1", "ACTUAL", 1_000_000, "POLICY", "up"), "%s u1 not twice", k)
		v = answer(t, c, "RL.CHECK", "up", k, "PEEK").([]any)
		assert.Equal(t, int64(8_999_999), v[2], "%s: the binding rule was charged 1,000,000, once", k)
	}
}

// lastWrites are the writes right before the kill, which may or may not
// reach the backup: each is acknowledged.
func (f *leaseFailover) lastWrites(ctx context.Context, t *testing.T, c *redis.Client) {
	pipe := c.Pipeline()
	var rel, acq, com []*redis.Cmd
	for _, k := range f.swaps {
		rel = append(rel, pipe.Do(ctx, "RL.RELEASE", k, "w0"))
		acq = append(acq, pipe.Do(ctx, "RL.ACQUIRE", k, 3, "1h", "ID", "n0"))
	}
	for _, k := range f.late {
		com = append(com, pipe.Do(ctx, "RL.COMMIT", k, "r1", "ACTUAL", 10))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	for i := range rel {
		require.Equal(t, int64(1), must(rel[i].Int64()), "%v", rel[i].Args())
		require.Equal(t, int64(1), must(acq[i].Slice())[0], "%v", acq[i].Args())
	}
	for _, cmd := range com {
		require.Equal(t, int64(1), must(cmd.Int64()), "%v", cmd.Args())
	}
}

// answer runs a command through c until the new owner answers it (the
// takeover waits 1.25 s after the death is detected) and returns its reply.
func answer(t *testing.T, c *redis.Client, args ...any) any {
	t.Helper()
	var v any
	var err error
	require.Eventually(t, func() bool {
		v, err = c.Do(context.Background(), args...).Result()
		return err == nil
	}, deadline, 10*time.Millisecond, "%v: %v", args, err)
	return v
}

func (f *leaseFailover) checkPools(ctx context.Context, t *testing.T, c *redis.Client) {
	for _, k := range f.pools {
		v := answer(t, c, "RL.ACQUIRE", k, 3, "1h", "ID", "after").([]any)
		assert.Equal(t, int64(0), v[0], "%s: its 3 leases came over, the limit binds", k)
		for i := range 3 {
			id := fmt.Sprint("w", i)
			assert.Equal(t, int64(1), answer(t, c, "RL.RELEASE", k, id), "%s %s releases once", k, id)
			assert.Equal(t, int64(0), answer(t, c, "RL.RELEASE", k, id), "%s %s not twice", k, id)
		}
	}
	swapped := 0
	for _, k := range f.swaps {
		v := answer(t, c, "RL.ACQUIRE", k, 3, "1h", "ID", "after").([]any)
		assert.Equal(t, int64(0), v[0], "%s: 3 leases came over, the limit binds", k)
		w0, n0 := answer(t, c, "RL.RELEASE", k, "w0").(int64), answer(t, c, "RL.RELEASE", k, "n0").(int64)
		assert.Equal(t, int64(1), w0+n0, "%s: w0 (released before the kill) or n0 (taken after it), never both", k)
		swapped += int(n0)
		for _, id := range []string{"w1", "w2"} {
			assert.Equal(t, int64(1), answer(t, c, "RL.RELEASE", k, id), "%s %s releases once", k, id)
		}
	}
	t.Logf("swaps right before the kill that reached the backup: %d of %d", swapped, len(f.swaps))
}

// checkBudgets: each reservation is outstanding once; a retried reserve
// charges nothing, a commit or cancel counts once, and a commit retried
// after the kill ends where one commit does.
func (f *leaseFailover) checkBudgets(ctx context.Context, t *testing.T, c *redis.Client) {
	const want = 100 - 10 - 1 // r1 committed at 10, r2 cancelled; a PEEK counts itself
	for _, k := range f.budgets {
		v := answer(t, c, "RL.RESERVE", k, "FIXED", 100, "1h", "COST", 30, "TTL", "1h", "ID", "r1").([]any)
		assert.Equal(t, int64(1), v[0], "%s: r1 is outstanding, a retried reserve is admitted", k)
		assert.Equal(t, int64(1), answer(t, c, "RL.COMMIT", k, "r1", "ACTUAL", 10), "%s r1 commits once", k)
		assert.Equal(t, int64(0), answer(t, c, "RL.COMMIT", k, "r1", "ACTUAL", 10), "%s r1 not twice", k)
		assert.Equal(t, int64(1), answer(t, c, "RL.CANCEL", k, "r2"), "%s r2 cancels once", k)
		assert.Equal(t, int64(0), answer(t, c, "RL.CANCEL", k, "r2"), "%s r2 not twice", k)
		assert.Equal(t, int64(want), answer(t, c, "RL.FIXED", k, 100, "1h", "PEEK").([]any)[2], "%s: remaining", k)
	}
	lost := 0
	for _, k := range f.late {
		lost += int(answer(t, c, "RL.COMMIT", k, "r1", "ACTUAL", 10).(int64)) // 1: the first commit was lost
		assert.Equal(t, int64(0), answer(t, c, "RL.COMMIT", k, "r1", "ACTUAL", 10), "%s r1 not twice", k)
		assert.Equal(t, int64(1), answer(t, c, "RL.CANCEL", k, "r2"), "%s r2 cancels once", k)
		assert.Equal(t, int64(want), answer(t, c, "RL.FIXED", k, 100, "1h", "PEEK").([]any)[2],
			"%s: the retried commit ends where one commit does", k)
	}
	t.Logf("commits right before the kill lost with it (retried): %d of %d", lost, len(f.late))
}

// checkLoad: the leases that came over are the oldest the load took, with
// no gap, and at most about an interval of the newest is lost.
func (f *leaseFailover) checkLoad(ctx context.Context, t *testing.T, c *redis.Client) {
	l := f.load
	assert.Zero(t, l.overLimit, "no pool admitted a fourth lease under load")
	maxLost := 0
	for _, k := range l.keys {
		answer(t, c, "RL.INFO", k)
		pipe := c.Pipeline()
		rel := make([]*redis.Cmd, l.admitted[k])
		for i := range rel {
			rel[i] = pipe.Do(ctx, "RL.RELEASE", k, "r"+strconv.Itoa(i))
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
		kept := 0
		for kept < len(rel) && must(rel[kept].Int64()) == 1 {
			kept++
		}
		for _, cmd := range rel[kept:] {
			assert.Equal(t, int64(0), must(cmd.Int64()), "%s: the leases kept are the oldest, with no gap (%v)", k, cmd.Args())
		}
		maxLost = max(maxLost, len(rel)-kept)
	}
	t.Logf("leases under load: %d rounds, %d of them in the %v before the kill; lost per key: max %d (bound %d)",
		l.roundsDone(), l.bound-1, lossWindow, maxLost, l.bound)
	assert.LessOrEqual(t, maxLost, l.bound, "a key loses at most about an interval of leases")
}

// leaseLoad takes a lease r<round> on each of keys per round through one
// node, and tries a fourth lease on each pool, which must be denied.
type leaseLoad struct {
	keys, pools []string
	mu          sync.Mutex
	rounds      int
	ends        roundEnds
	bound       int // ends.lossBound at the kill
	admitted    map[string]int
	overLimit   int
	err         error
}

// maxLeaseRounds keeps each key under its 1024 leases.
const maxLeaseRounds = 1000

func (l *leaseLoad) run(ctx context.Context, c *redis.Client, stop <-chan struct{}) {
	for r := 0; r < maxLeaseRounds; r++ {
		select {
		case <-stop:
			return
		default:
		}
		pipe := c.Pipeline()
		var cs, ps []*redis.Cmd
		for _, k := range l.keys {
			cs = append(cs, pipe.Do(ctx, "RL.ACQUIRE", k, 1_000_000, "1h", "ID", "r"+strconv.Itoa(r)))
		}
		for _, k := range l.pools {
			ps = append(ps, pipe.Do(ctx, "RL.ACQUIRE", k, 3, "1h", "ID", "x"))
		}
		_, err := pipe.Exec(ctx)
		l.mu.Lock()
		if err != nil {
			l.err = err
			l.mu.Unlock()
			return
		}
		for i, cmd := range cs {
			if must(cmd.Slice())[0] == int64(1) {
				l.admitted[l.keys[i]]++
			}
		}
		for _, cmd := range ps {
			if must(cmd.Slice())[0] == int64(1) {
				l.overLimit++
			}
		}
		l.rounds++
		l.ends = append(l.ends, time.Now())
		l.mu.Unlock()
	}
}

func (l *leaseLoad) roundsDone() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rounds
}

var copiesLine = regexp.MustCompile(`rl_copies:(\d+)`)

// waitCopies waits until the backups together hold n copies.
func waitCopies(t *testing.T, n int, backups ...*clusterProc) {
	t.Helper()
	cs := make([]*redis.Client, len(backups))
	for i, p := range backups {
		cs[i] = newClient(t, p.addr)
	}
	var sum int
	require.Eventually(t, func() bool {
		sum = 0
		for _, c := range cs {
			info, err := c.Info(context.Background(), "replication").Result()
			if m := copiesLine.FindStringSubmatch(info); err == nil && m != nil {
				sum += int(must(strconv.ParseInt(m[1], 10, 64)))
			}
		}
		return sum == n
	}, deadline, 10*time.Millisecond, "the backups hold %d copies (last seen %d)", n, sum)
}
