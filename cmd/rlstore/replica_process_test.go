package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// procTable is the slot table of the nodes named p0..p(n-1), as they compute it.
func procTable(t *testing.T, n int) *cluster.Table {
	t.Helper()
	var nodes []cluster.Node
	for i := range n {
		nodes = append(nodes, cluster.Node{Name: fmt.Sprint("p", i)})
	}
	tb, err := cluster.NewTable(1, nodes)
	require.NoError(t, err)
	return tb
}

// keysWhere returns n keys prefix0, prefix1, ... for which pick is true.
func keysWhere(n int, prefix string, pick func(slot int) bool) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := prefix + strconv.Itoa(i)
		if pick(cluster.Slot([]byte(k))) {
			out = append(out, k)
		}
	}
	return out
}

const (
	atLimit   = 20        // the limit of the keys filled to it
	bigLimit  = 1_000_000 // the limit of the keys that count admissions
	replicaIv = 100 * time.Millisecond
)

// peek returns key's PEEK reply through c.
func peek(ctx context.Context, c *redis.Client, key string, limit int) ([]int64, error) {
	return c.Do(ctx, "RL.SLIDE", key, limit, 3600, "PEEK").Int64Slice()
}

// TestClusterProcessReplicaFailover: 3 nodes under steady load on 1,000
// keys at their limit, half of them owned by p1, plus 100 keys of p1's
// counting admissions; kill -9 of p1. With replicas the new owners answer
// soon after the death is detected, every limit holds, and each counting
// key lost at most about one interval of its decisions. Without replicas
// (the control) every one of p1's limits resets.
func TestClusterProcessReplicaFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node kill -9 under load, twice: not in -short")
	}
	for _, replicas := range []string{"1", "0"} {
		t.Run("replicas "+replicas, func(t *testing.T) { replicaFailover(t, replicas) })
	}
}

func replicaFailover(t *testing.T, replicas string) {
	// lan timing: at fast, a host loaded by -race saw p0 declared dead while
	// it filled the keys, and then p1's real death left slots lost for 30 s.
	ps := startClusterProcs(t, 3, "--cluster-timing", "lan", "--replicas", replicas, "--replica-interval", replicaIv.String())
	tb := procTable(t, 3)
	ctx := context.Background()
	c0 := newClient(t, ps[0].addr)
	victim := keysWhere(500, "v:", func(s int) bool { return tb.Owner(s).Name == "p1" })
	others := keysWhere(500, "o:", func(s int) bool { return tb.Owner(s).Name != "p1" })
	counting := keysWhere(100, "c:", func(s int) bool { return tb.Owner(s).Name == "p1" })
	limited := append(append([]string(nil), victim...), others...)

	// A node of a loaded host may answer -CLUSTERDOWN while it renews its
	// lease (docs/cluster.md); a command refused so counts nothing, so the
	// fill is sent again until one pass gets no error: a key at its limit
	// only denies more.
	var err error
	for try := 0; try < 5; try++ {
		pipe := c0.Pipeline()
		for range atLimit {
			for _, k := range limited {
				pipe.Do(ctx, "RL.SLIDE", k, atLimit, 3600)
			}
		}
		if _, err = pipe.Exec(ctx); err == nil {
			break
		}
		t.Logf("filling the keys, pass %d: %v", try+1, err)
	}
	require.NoError(t, err, "filling every key to its limit")

	ld := &steadyLoad{limited: limited, counting: counting, admitted: map[string]int64{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); ld.run(ctx, c0, stop) }()
	require.Eventually(t, func() bool { return ld.roundsDone() >= 10 }, deadline, 10*time.Millisecond)
	time.Sleep(3 * replicaIv) // the load runs for a few intervals: not an ordering, a duration of the scenario

	killing := time.Now()
	ps[1].Kill()
	killed := time.Now()
	detected := waitDeath(t, ps[0], ps[2])
	answered := waitAnswered(t, c0, append(append([]string(nil), victim...), counting...)).Sub(detected)
	close(stop)
	<-done

	held, reset := 0, 0
	for _, k := range victim {
		rep, err := peek(ctx, c0, k, atLimit)
		require.NoError(t, err)
		if rep[2] == 0 {
			held++
		} else {
			reset++
		}
	}
	othersHeld := 0
	for _, k := range others {
		if rep, err := peek(ctx, c0, k, atLimit); err == nil && rep[2] == 0 {
			othersHeld++
		}
	}
	bound := ld.ends.lossBound(killing, killed)
	var maxLost, sumLost int64
	for _, k := range counting {
		rep, err := peek(ctx, c0, k, bigLimit)
		require.NoError(t, err)
		used := int64(bigLimit) - rep[2] - 1 // a PEEK that would admit counts itself in remaining
		lost := ld.admitted[k] - used
		maxLost = max(maxLost, lost)
		sumLost += lost
	}
	t.Logf("--replicas %s: death detected %v after kill -9; p1's keys answered %v after detection",
		replicas, detected.Sub(killed).Round(time.Millisecond), answered.Round(time.Millisecond))
	t.Logf("--replicas %s: p1's %d keys at their limit: %d still at it, %d reset; the other owners' %d: %d still at it",
		replicas, len(victim), held, reset, len(others), othersHeld)
	t.Logf("--replicas %s: counting keys: %d rounds, %d of them in the %v before the kill; lost decisions per key: max %d (bound %d), mean %.1f",
		replicas, ld.roundsDone(), bound-1, lossWindow, maxLost, bound, float64(sumLost)/float64(len(counting)))
	assert.Equal(t, len(others), othersHeld, "the survivors' own keys are untouched")
	if replicas == "0" {
		assert.Equal(t, len(victim), reset, "the control: without replicas every limit of the dead owner resets")
		return
	}
	assert.Equal(t, len(victim), held, "every limit of the dead owner holds on its new owner")
	// The bound is detection plus one interval; the new owners
	// first wait the takeover's 1.25 s (the dead owner's lease runs out: see
	// docs/cluster.md, "Safety"). A loaded host running -race gets more
	// room here, and the log above shows the time.
	assert.LessOrEqual(t, answered, 1250*time.Millisecond+time.Second, "the new owners answer soon after the takeover's wait")
	assert.LessOrEqual(t, maxLost, int64(bound), "a key loses at most about an interval of decisions")
}

// steadyLoad sends rounds of one decision per key through one node and
// counts, per counting key, the admissions the client saw.
type steadyLoad struct {
	limited, counting []string
	mu                sync.Mutex // guards the fields below
	rounds            int
	ends              roundEnds
	admitted          map[string]int64
}

func (l *steadyLoad) run(ctx context.Context, c *redis.Client, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		pipe := c.Pipeline()
		for _, k := range l.limited {
			pipe.Do(ctx, "RL.SLIDE", k, atLimit, 3600)
		}
		var cs []*redis.Cmd
		for _, k := range l.counting {
			cs = append(cs, pipe.Do(ctx, "RL.SLIDE", k, bigLimit, 3600))
		}
		_, _ = pipe.Exec(ctx) // p1's keys fail between the kill and its detection
		l.mu.Lock()
		for i, cmd := range cs {
			if rep, err := cmd.Int64Slice(); err == nil && rep[0] == 1 {
				l.admitted[l.counting[i]]++
			}
		}
		l.rounds++
		l.ends = append(l.ends, time.Now())
		l.mu.Unlock()
	}
}

func (l *steadyLoad) roundsDone() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rounds
}

// lossWindow is how long before a kill -9 the last shipment its backup
// got may have been drained: docs/replicas.md promises that a crash loses
// at most about one --replica-interval; on a host loaded by -race the ship
// tick may run an interval late, and the shipment itself take up to
// another (at two intervals, runs whose rounds took over 200 ms lost as
// many hits as the bound allowed).
const lossWindow = 3 * replicaIv

// roundEnds is when each round of a load ended; a round hits every key of
// its load once.
type roundEnds []time.Time

// lossBound bounds the hits a key of the load loses when its owner is
// killed between killing and killed. A hit the owner counted after the
// drain of the last shipment its backup got belongs to a round that ended
// after that drain, at most lossWindow before the kill, or to the one round
// in flight at the kill. Counting those rounds, rather than multiplying a
// mean rate over the run (slowed by the failover, and by the host), keeps
// the bound what the product promises on a loaded host: the rounds slow
// down with the host. A broken replica path loses every round since the
// load began (tens), far above it.
func (r roundEnds) lossBound(killing, killed time.Time) int {
	from := killing.Add(-lossWindow)
	n := 1 // the round in flight at the kill
	for _, e := range r {
		if e.After(from) && !e.After(killed) {
			n++
		}
	}
	return n
}

// waitDeath returns when the last of survivors saw the cluster shrink by
// one: the death is detected once every node that takes a slot over knows.
func waitDeath(t *testing.T, survivors ...*clusterProc) time.Time {
	t.Helper()
	want := fmt.Sprintf("cluster_size:%d\r\n", len(survivors))
	seen := make([]bool, len(survivors))
	clients := make([]*redis.Client, len(survivors))
	for i, p := range survivors {
		clients[i] = newClient(t, p.addr)
	}
	var last time.Time
	require.Eventually(t, func() bool {
		all := true
		for i, c := range clients {
			if !seen[i] {
				info, err := c.ClusterInfo(context.Background()).Result()
				seen[i] = err == nil && strings.Contains(info, want)
			}
			all = all && seen[i]
		}
		last = time.Now()
		return all
	}, deadline, 2*time.Millisecond, "every survivor sees the death")
	return last
}

// waitAnswered returns when one pipeline of PEEKs of keys, through c, first
// gets an answer for every key.
func waitAnswered(t *testing.T, c *redis.Client, keys []string) time.Time {
	t.Helper()
	ctx := context.Background()
	var at time.Time
	require.Eventually(t, func() bool {
		pipe := c.Pipeline()
		for _, k := range keys {
			pipe.Do(ctx, "RL.SLIDE", k, atLimit, 3600, "PEEK")
		}
		_, err := pipe.Exec(ctx)
		at = time.Now()
		return err == nil
	}, deadline, 2*time.Millisecond, "the new owners answer for the dead owner's keys")
	return at
}

// TestClusterProcessReplicaStoppedBackup: a backup that stops answering
// (SIGSTOP) does not slow its primary's decisions; the primary drops its
// queue, backs off, and after SIGCONT catches the backup up with a full
// sync, so that the backup still takes the keys over with their counts.
func TestClusterProcessReplicaStoppedBackup(t *testing.T) {
	if testing.Short() {
		t.Skip("SIGSTOP of a backup under load: not in -short")
	}
	// lan timing: the stop is shorter than failure detection, so p2 stays the backup.
	ps := startClusterProcs(t, 3, "--cluster-timing", "lan", "--cluster-timeout", "200ms", "--replica-interval", replicaIv.String())
	tb := procTable(t, 3)
	ctx := context.Background()
	keys := keysWhere(100, "s:", func(s int) bool {
		b, _ := tb.RunnerUp(s)
		return tb.Owner(s).Name == "p0" && b.Name == "p2"
	})
	c0 := newClient(t, ps[0].addr)
	ld := &steadyLoad{counting: keys, admitted: map[string]int64{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); ld.run(ctx, c0, stop) }()
	window := func() int {
		before := ld.roundsDone()
		time.Sleep(700 * time.Millisecond) // a measuring window of the load, not an ordering
		return ld.roundsDone() - before
	}
	stopped := false
	t.Cleanup(func() {
		if stopped {
			_ = ps[2].Cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	// A window's rounds follow the host's load as much as p2: once 0.32x at
	// load 11 under -race, against 0.95-1.06x in the runs beside it. So a
	// pair of windows is measured again, up to three times; a primary that
	// waited for its stopped backup would make almost no decision in any.
	var running, during int
	for try := 1; try <= 3; try++ {
		running = window()
		require.NoError(t, ps[2].Cmd.Process.Signal(syscall.SIGSTOP))
		stopped = true
		during = window()
		require.NoError(t, ps[2].Cmd.Process.Signal(syscall.SIGCONT))
		stopped = false
		t.Logf("try %d: p0's decisions on %d keys in 700ms: %d rounds with p2 answering, %d with p2 stopped (%.2fx)",
			try, len(keys), running, during, float64(during)/float64(running))
		if 2*during >= running {
			break
		}
	}
	assert.GreaterOrEqual(t, float64(during), 0.5*float64(running), "a stopped backup does not slow its primary's decisions")

	online := regexp.MustCompile(`rl_backup\d:name=p2,[^\r]*state=online,[^\r]*full_syncs=([2-9]|\d\d+),[^\r]*failures=[1-9]`)
	require.Eventually(t, func() bool {
		info, err := c0.Info(ctx, "replication").Result()
		return err == nil && online.MatchString(info)
	}, deadline, 20*time.Millisecond, "p0 failed to ship to p2, then caught it up with a full sync")
	time.Sleep(2 * replicaIv) // the load runs on for two intervals after the catch-up
	close(stop)
	<-done
	c2 := newClient(t, ps[2].addr)
	killing := time.Now()
	ps[0].Kill()
	bound := ld.ends.lossBound(killing, time.Now())
	waitClusterSize(t, ps[2], 2)
	var maxLost int64
	for _, k := range keys {
		var rep []int64
		require.Eventually(t, func() bool {
			var err error
			rep, err = peek(ctx, c2, k, bigLimit)
			return err == nil
		}, deadline, 10*time.Millisecond)
		maxLost = max(maxLost, ld.admitted[k]-(int64(bigLimit)-rep[2]-1))
	}
	t.Logf("after the catch-up and kill -9 of p0, p2 serves its keys; lost decisions per key: max %d (bound %d)", maxLost, bound)
	assert.LessOrEqual(t, maxLost, int64(bound), "the full sync carried what changed while p2 was stopped")
}
