package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestoredProcessGetsItsHandedSlots stages RESTORED (docs/cluster.md,
// "A quick restart") with real processes. a and b hand c its slots when it
// joins; each marks them with c's process (its lease incarnation), and
// releases them, on RL.PEER RELEASED, to that process only. c is killed
// (kill -9) and started again with its command line and data dir: its new
// process restored the old one's store, lists it in its data dir's
// cluster-processes, and says so (RESTORED) when it asks RELEASED. a and b
// release the slots, and c serves them from its store: no key admits above
// its limit across the whole run, and the slots are served within
// restoredBound of the moment c can reach a and b again, with no operator's
// RL.CLUSTER SETSLOT STABLE.
//
// Each step holds c's RESP traffic with a and b (gossip, and with it the
// lease, goes on):
//   - at c's join, until a's and b's leases have heard from c's process, so
//     that each handoff's mark names it: a cut before the lease's first
//     answer from c would mark no process, and no later process would be
//     released the slot, RESTORED or not: only HANDED releases such a slot
//     (the answer usually comes first, but nothing else orders the two);
//   - at c's restart, until its imports have waited past the import wait,
//     so that its RL.PEER PULL fails and RELEASED alone can end them (a
//     PULL's DONE, which a backup sends without copies when it holds none,
//     ends them at once, RESTORED or not).
//
// --replicas 0: with replicas, a and b hold c's copies of the slots they
// handed it (KeepHanded, then c's full syncs), and answer a later process's
// RELEASED with them and a DONE, RESTORED or not. Without replicas a data
// dir is a restarted process's only state, which RESTORED is for. Without
// the word (claims sending no RESTORED) the slots wait, stuck, to the end.
//
// As root each node runs in a network namespace of its own (testHosts); on
// loopback the test cannot hold c's traffic, and skips.
func TestRestoredProcessGetsItsHandedSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node kill -9 and restart with held RESP traffic: not in -short")
	}
	hs := testHosts(t, 3)
	if hs[0].ns == "" || netnsMissing("iptables") != "" {
		t.Skip("needs network namespaces and iptables (root): on loopback c's PULL is answered, and RESTORED is never asked")
	}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	args := fixedNodes(t, hs, func(int) bool { return true }, func(i int) []string {
		// appendfsync always: a kill -9 keeps every decision c made, so
		// that its restart loses none (a crash loses its last second with
		// everysec, a documented loss, not this test's subject).
		return []string{"--data-dir", dirs[i], "--replicas", "0", "--appendfsync", "always"}
	})
	ctx := context.Background()
	ns := startNodes(t, hs[:2], args[:2])
	holdRESPOf(t, hs, true)
	ns = append(ns, startNode(t, hs[2], args[2]))
	cc := newClient(t, ns[2].addr)
	require.Eventually(t, func() bool {
		f, err := infoSection(ctx, cc, "cluster")
		return err == nil && f["rl_cluster_quorum"] == "1"
	}, deadline, 10*time.Millisecond, "c holds its lease: a's and b's grants came")
	// a and b ask c for grants five times a lease term, and c's answers
	// carry its incarnation: not an ordering, a duration of the scenario.
	time.Sleep(leaseTerm)
	holdRESPOf(t, hs, false)
	waitFormed(t, procsOf(ns)...)

	q := newQuotaLoad(keysOwnedBy(t, cc, "c", "restored:", 30))
	for range handoffLimit / 2 {
		q.round(ctx, cc)
	}
	require.Empty(t, q.errs, "c serves its keys")

	holdRESPOf(t, hs, true)
	killed := time.Now()
	ns[2].Kill()
	ns[2] = ns[2].restart(t)
	restarted := time.Now()
	cc = newClient(t, ns[2].addr)
	require.Eventually(t, func() bool { // its PULLs failed, and so did its RELEASED at the import wait
		f, err := infoSection(ctx, cc, "cluster")
		stuck := f["rl_cluster_handoff_import_slots_stuck"]
		return err == nil && stuck != "" && stuck != "0"
	}, deadline, 10*time.Millisecond, "c's new process imports its slots, stuck past the import wait")
	holdRESPOf(t, hs, false)
	lifted := time.Now()
	require.Eventually(t, func() bool {
		f, err := infoSection(ctx, cc, "cluster")
		return err == nil && f["rl_cluster_handoff_slots_importing"] == "0"
	}, restoredBound, 10*time.Millisecond, "a and b release c's slots to its RELEASED RESTORED (not released: stuck)")
	served := time.Now()
	ns[2].WaitLog(t, releasedLine)

	errs := len(q.errs)
	for range handoffLimit / 2 {
		q.round(ctx, cc)
	}
	for _, n := range ns[:2] {
		q.round(ctx, newClient(t, n.addr))
	}
	t.Logf("c ready again %v after its kill; served %v after c could reach a and b again, %v after its restart; %d requests; %d admitted above the limit; %d errors after: %v",
		restarted.Sub(killed).Round(time.Millisecond), served.Sub(lifted).Round(time.Millisecond), served.Sub(restarted).Round(time.Millisecond),
		q.sent, q.over(), len(q.errs)-errs, errSummary(q.errs))
	assert.Zero(t, q.over(), "admissions above the limit: c's new process served its slots from nothing")
	assert.True(t, q.allAt(handoffLimit), "every key admitted its whole limit: none lost a decision")
}

// leaseTerm is the servers' lease term (cluster.DefaultTiming's Lease).
const leaseTerm = time.Second

// restoredBound bounds how long a restarted process's import that
// RELEASED can end waits once its old owner answers: the next question
// (every second) and its answer.
const restoredBound = 5 * time.Second

// releasedLine is the log line of an import that RELEASED ended.
var releasedLine = regexp.MustCompile(`msg="cluster: an import's old owner released slots without handing them over; serving them from what came"`)

// holdRESPOf holds (on) or lets through again (off) the RESP traffic of
// hs[2] with hs[0] and hs[1] (holdRESP).
func holdRESPOf(t *testing.T, hs []nodeHost, on bool) {
	t.Helper()
	holdRESP(t, hs[2], hs[0], on)
	holdRESP(t, hs[2], hs[1], on)
}
