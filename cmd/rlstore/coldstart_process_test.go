package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// TestColdStartAtOnce starts the README's three nodes at once, each
// joining the other two, as a user pasting the README's commands does,
// and requires the cluster to end its handoffs and serve every key. At a
// first formation the nodes' tables move slots between nodes that never
// served them (a and b each hold a two-node table with c for a moment),
// so an answer that names another node as a slot's holder can send an
// import round a circle. f036ac8 did: c waited on 5,589 slots for the
// whole run, in 2 of 3 starts. The other tests start nodes one at a time
// (startNodes), so only this one and the split tests see a first
// formation of several nodes at once. Three rounds, since some starts
// form without any import at all.
func TestColdStartAtOnce(t *testing.T) {
	for round := range 3 {
		ok := t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			hs := loopbackHosts(3)
			args := fixedNodes(t, hs, func(int) bool { return true },
				func(int) []string { return []string{"--data-dir", t.TempDir()} })
			start := time.Now()
			ps := make([]*proc, len(args))
			for i := range args { // no wait between the starts: each may join before the others have
				ps[i] = hs[i].start(t, args[i]...)
			}
			ns := make([]*node, len(args))
			for i, p := range ps {
				cp := &clusterProc{proc: p, name: string(rune('a' + i)), addr: p.Addr(t), gossip: p.WaitLog(t, gossipLine)[1]}
				ns[i] = &node{clusterProc: cp, host: hs[i], args: args[i]}
			}
			waitFormed(t, procsOf(ns)...)
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{ns[0].addr, ns[1].addr, ns[2].addr}})
			t.Cleanup(func() { _ = cc.Close() })
			var last error
			if !assert.Eventually(t, func() bool {
				for i := range 200 {
					if last = cc.Do(context.Background(), "RL.SLIDE", fmt.Sprint("cold:", i), 1000, 3600).Err(); last != nil {
						return false
					}
				}
				return true
			}, deadline, 50*time.Millisecond, "every key served") {
				t.Fatalf("the last error: %v", last)
			}
			t.Logf("formed and serving every key %.1f s after the first start", time.Since(start).Seconds())
		})
		if !ok {
			return
		}
	}
}

// TestColdStartStaggered starts the README's three nodes 50 to 100 ms
// apart, as a shell runs the three commands or a supervisor starts them,
// five times, and counts what a client sees until every slot is served:
// the error replies of passes over 512 keys sent to every node, and how
// long until every node imports nothing and a pass has no error. Such
// starts form through tables of a moment (docs/cluster.md, "A quick
// restart"): b imports its slots from its first table's guess a, whose
// PULL answer needs a's lease, and c's join moves some of them on before
// a answers. Before b asked a on c's behalf (relayGuess), about one start
// in five (2 of 5 in the first run) had c wait the 5 s import wait and an
// ASK round: served 6.3-6.8 s after the first start, with 84-171
// -CLUSTERDOWN replies through a and b and TRYAGAIN from c, while every
// node said cluster_slots_fail:0. Now such a start serves every slot
// within coldStartFormed. One wait of the import wait's length is left,
// rarer: a PULL that reaches its guess before the guess holds its lease,
// with no table change after it to send another. Every round must serve
// within coldStartBound; how many took the wait is logged, not asserted,
// since the code bounds each start, not how often one waits (CI at
// eeaca6e, under -race: 2 of 5). In that wait no node counted
// the slots in cluster_slots_fail before the import wait ended (CI once:
// 88 -CLUSTERDOWN, cluster_slots_fail 0 on every node); the importer now
// counts an import from a guess from its start (docs/cluster.md's
// CLUSTER INFO row). The count is logged here, not asserted: a start that
// forms at once shows none; TestSlotsFailCountsAnImportNobodyServes and
// TestSlotsFailCountsAGuessImport hold the count's rules.
func TestColdStartStaggered(t *testing.T) {
	ms := time.Millisecond
	gaps := [][2]time.Duration{{50 * ms, 100 * ms}, {75 * ms, 75 * ms}, {100 * ms, 50 * ms}, {60 * ms, 90 * ms}, {90 * ms, 60 * ms}}
	slow := 0
	for round, gap := range gaps {
		ok := t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			r := coldStartRound(t, gap[0], gap[1])
			t.Logf("gaps %v: every slot served %.2f s after the first start; errors %v; most cluster_slots_fail seen %v",
				gap, r.formed.Seconds(), r.errs, r.mostFail)
			assert.LessOrEqual(t, r.formed, coldStartBound, "formation takes at most the import wait and one ask")
			if r.formed > coldStartFormed {
				slow++ // its cluster_slots_fail is logged, not asserted: see the comment above
			}
		})
		if !ok {
			return
		}
	}
	t.Logf("%d of %d starts waited for an import (more than %v)", slow, len(gaps), coldStartFormed)
}

// coldStartFormed bounds a staggered cold start that waits for no import
// wait: a handoff's milliseconds and the lease's first term (1 s), with a
// loaded host's slack. coldStartBound bounds one that does: the import
// wait (5 s), one RL.PEER RELEASED ask a second later, and slack.
const (
	coldStartFormed = 3 * time.Second
	coldStartBound  = 10 * time.Second
)

// coldStart is what one staggered start showed.
type coldStart struct {
	formed   time.Duration  // from the first start until every slot is served
	errs     map[string]int // error replies by their first word
	mostFail map[string]int // each node's highest cluster_slots_fail, in a table of all three holding its lease, while a pass had errors
}

// coldStartRound starts three nodes with data dirs, the second gap1 after
// the first and the third gap2 after that, and sends passes over 512 keys
// (each key to one node, in turn) until every node imports nothing and a
// pass has no error, or the deadline.
func coldStartRound(t *testing.T, gap1, gap2 time.Duration) coldStart {
	hs := loopbackHosts(3)
	args := fixedNodes(t, hs, func(int) bool { return true },
		func(int) []string { return []string{"--data-dir", t.TempDir()} })
	start := time.Now()
	ps := make([]*proc, len(args))
	for i := range args {
		if i > 0 {
			time.Sleep([]time.Duration{gap1, gap2}[i-1])
		}
		ps[i] = hs[i].start(t, args[i]...)
	}
	cs := make([]*redis.Client, len(ps))
	for i, p := range ps {
		cs[i] = redis.NewClient(&redis.Options{Addr: p.Addr(t), MaxRetries: -1, ReadTimeout: 3 * time.Second})
		t.Cleanup(func() { _ = cs[i].Close() })
	}
	r := coldStart{errs: map[string]int{}, mostFail: map[string]int{}}
	ctx := context.Background()
	for pass := 0; time.Since(start) < deadline; pass++ {
		bad := 0
		for i, c := range cs {
			pipe := c.Pipeline()
			var cmds []*redis.Cmd
			for k := i; k < 512; k += len(cs) {
				cmds = append(cmds, pipe.Do(ctx, "RL.SLIDE", fmt.Sprint("cold:", (k+pass)%512), 1_000_000, 3600))
			}
			_, _ = pipe.Exec(ctx)
			for _, cmd := range cmds {
				if err := cmd.Err(); err != nil {
					bad++
					word, _, _ := strings.Cut(err.Error(), " ")
					r.errs[word]++
				}
			}
		}
		settledAll := true
		for i, c := range cs {
			if info, err := c.Info(ctx, "cluster").Result(); err != nil || !strings.Contains(info, "rl_cluster_owners:3\r\n") ||
				!settledInfo.MatchString(info) || !servingInfo.MatchString(info) {
				settledAll = false
			}
			if bad == 0 {
				continue
			}
			// Once formed, by the membership: before, a node that waits
			// to meet a member counts every slot.
			if ci, err := c.ClusterInfo(ctx).Result(); err == nil && strings.Contains(ci, "cluster_state:ok") && strings.Contains(ci, "cluster_size:3") {
				if m := regexp.MustCompile(`cluster_slots_fail:(\d+)`).FindStringSubmatch(ci); m != nil {
					f, _ := strconv.Atoi(m[1])
					name := string(rune('a' + i))
					r.mostFail[name] = max(r.mostFail[name], f)
				}
			}
		}
		if bad == 0 && settledAll {
			r.formed = time.Since(start)
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not formed within %v: errors %v", deadline, r.errs)
	return r
}
