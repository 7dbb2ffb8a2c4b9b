package handoff

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// TestOperatorEndsAnImportThatWaitsForever: an import whose old owner
// answers every RL.PEER RELEASED with NONE waits on, asked every second,
// with every member alive (a slot handed to a member's old process, say).
// RL.CLUSTER INFO counts it once it has waited longer than the import
// wait, and a log line names it, whom it waits on and the remedy. The
// operator's RL.CLUSTER SETSLOT slot STABLE (EndImport) ends it: the slot
// is served from the keys this node holds, and counted. It refuses while
// the wait may end by itself (younger than the import wait, or a copy
// from the old owner under way), on a slot this node does not own, and
// without the lease. A handoff from the old owner that comes later only
// adds the keys this node lacks.
func TestOperatorEndsAnImportThatWaitsForever(t *testing.T) {
	v := alive(viewOf(t, 1, []string{"x", "p"}))
	key := keyWhere(t, "stuck:", "a key of x's", func(slot int) bool { return v.Table.Owner(slot).Name == "x" })
	slot := cluster.Slot(key)
	fw := &noneOwner{asked: make(chan string, 1024)}
	n, cur := leasedNode(t, v, fw, false)
	logs := captureLog(n)
	st := n.State(slot)
	require.True(t, st != nil && st.Mode() == ModeImporting && st.Peer().Name == "p", "x imports its slot from p (its first view's guess)")

	now := time.Now()
	p := window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Hour}
	entry := func(k []byte, used uint64) shard.Entry {
		return shard.Entry{Key: k, Params: p, State: window.State{uint64(now.UnixNano()), used}}
	}
	require.NoError(t, n.store.Import(entry(key, 7), now.UnixNano())) // what x holds (a data dir's)

	_, err := n.EndImport(slot)
	var we *WaitError
	require.ErrorAs(t, err, &we, "younger than StableAfter: p's handoff may be under way")
	assert.Equal(t, WaitYoung, we.Why)
	assert.Equal(t, "p", we.Peer)

	// The import has waited past the import wait, and p answers NONE.
	n.ho.waits.since[slot].Add(-int64(importWait + 2*releaseRetry))
	n.ho.set(slot, &SlotState{mode: ModeImporting, peer: st.peer, until: time.Now(), guess: st.guess})
	for range 2 {
		n.expireImports()
		require.Equal(t, strconv.Itoa(slot), <-fw.asked, "x asks p whether it released the slot")
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "old owner still holds slots") }, 10*time.Second, time.Millisecond)
		n.ho.set(slot, &SlotState{mode: ModeImporting, peer: st.peer, until: time.Now(), guess: st.guess}) // ask again now
	}
	require.Equal(t, ModeImporting, n.State(slot).Mode(), "NONE: the import waits on")
	info := pairsOf(n.HandoffPairs())
	assert.Equal(t, "1", info["handoff_import_slots_stuck"], "only this slot has waited longer than the import wait")
	assert.GreaterOrEqual(t, atoi(t, info["handoff_import_longest_wait_ms"]), int((importWait+2*releaseRetry)/time.Millisecond))
	assert.Equal(t, "0", info["handoff_imports_ended_by_operator"])
	assert.Equal(t, 1, n.Stats().ImportsStuck)
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "longer than the import wait"), "logged once in %s: %s", stuckLogEvery, out)
	assert.Contains(t, out, "RL.CLUSTER SETSLOT <slot> STABLE on this node")
	assert.Contains(t, out, fmt.Sprintf("slots=1 first=[%d] waiting_on=[p]", slot))

	_, err = n.EndImport(slot)
	require.ErrorAs(t, err, &we, "stuck, but younger than StableAfter: a failing handoff from p is still retried")
	assert.Equal(t, WaitYoung, we.Why)
	n.ho.waits.since[slot].Add(-int64(StableAfter))

	n.ho.waits.copied("p")
	_, err = n.EndImport(slot)
	require.ErrorAs(t, err, &we, "p sends the slot's keys now: its DONE ends the wait")
	assert.Equal(t, WaitCopying, we.Why)
	n.ho.waits.copyMu.Lock()
	n.ho.waits.copyAt["p"] -= int64(2 * importWait) // that copy stopped long ago
	n.ho.waits.copyMu.Unlock()

	fw.servesReply(t, "+"+strconv.Itoa(slot))
	_, err = n.EndImport(slot)
	require.ErrorAs(t, err, &we, "p's table still names it the owner")
	assert.Equal(t, WaitServed, we.Why)
	fw.servesReply(t, "") // p does not answer
	_, err = n.EndImport(slot)
	require.ErrorAs(t, err, &we, "p may serve the slot")
	assert.Equal(t, WaitNoAnswer, we.Why)
	fw.servesReply(t, "+"+releaseNone)

	pSlot := slotWhere(t, "a slot of p's", func(s int) bool { return v.Table.Owner(s).Name == "p" })
	_, err = n.EndImport(pSlot)
	assert.ErrorIs(t, err, ErrNotOwner)
	lapsed := buildNode(t, cur, fw, cluster.NewLease("x", time.Hour), false) // it never reached a majority
	_, err = lapsed.EndImport(slot)
	assert.ErrorIs(t, err, ErrNoLease)
	require.Equal(t, ModeImporting, n.State(slot).Mode(), "no refusal ended it")

	ended, err := n.EndImport(slot)
	require.NoError(t, err)
	assert.True(t, ended)
	assert.Nil(t, n.State(slot), "the slot follows the table: served here")
	assert.True(t, n.MayServe(&core.Session{}, slot))
	assert.Empty(t, n.holderOf(slot), "held here")
	assert.Equal(t, int64(7), used(t, n, key, now), "served from the keys x holds")
	info = pairsOf(n.HandoffPairs())
	assert.Equal(t, "0", info["handoff_import_slots_stuck"])
	assert.Equal(t, "1", info["handoff_imports_ended_by_operator"])
	assert.Contains(t, logs.String(), fmt.Sprintf("an operator ended a slot's import wait (RL.CLUSTER SETSLOT STABLE); serving it from the keys this node holds, which may lack what its old owner decided\" slot=%d waited_on=p", slot))

	ended, err = n.EndImport(slot)
	require.NoError(t, err, "a slot that does not wait: +OK, as Redis's STABLE")
	assert.False(t, ended)
	assert.Equal(t, "1", pairsOf(n.HandoffPairs())["handoff_imports_ended_by_operator"])

	// p hands the slot over after all: x keeps its 7 (newer: it served
	// them), and takes the key it lacks.
	other := keyWhere(t, "stuck:", "another key of the slot", func(s int) bool { return s == slot })
	if bytes.Equal(other, key) {
		other = keyWhere(t, "stuck-other:", "another key of the slot", func(s int) bool { return s == slot })
	}
	w := &nopWriter{}
	n.peerImport(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerImport), []byte("p"),
		[]byte("reset"), []byte(strconv.Itoa(slot)), persistence.AppendEntries(nil, []shard.Entry{entry(key, 3), entry(other, 5)}, now.UnixNano())})
	require.Equal(t, "+OK", w.last)
	n.peerDone(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerDone), []byte("p"), []byte(strconv.Itoa(slot))})
	require.Equal(t, "+OK", w.last)
	assert.Nil(t, n.State(slot))
	assert.Equal(t, int64(7), used(t, n, key, now), "a late handoff does not replace what x served")
	assert.Equal(t, int64(5), used(t, n, other, now), "it adds the key x lacked")
}

// TestOperatorEndsTheWaitOfANewProcess: the wait the handed-process rule
// makes (TestHandedSlotNotReleasedToANewProcess), between two nodes. x
// handed a slot to p's old process and no longer holds its copies; p's
// new process imports the slot from x, and x answers its RL.PEER RELEASED
// with NONE for as long as both live. RL.CLUSTER SETSLOT slot STABLE on p
// ends the wait: p serves the slot from what it holds (nothing: the loss
// of the crash, which the operator accepts).
func TestOperatorEndsTheWaitOfANewProcess(t *testing.T) {
	vx := alive(viewOf(t, 1, []string{"x", "p"}))
	slot := slotWhere(t, "a slot p owns and x backs up", func(s int) bool {
		ru, ok := vx.Table.RunnerUp(s)
		return ok && ru.Name == "x" && vx.Table.Owner(s).Name == "p"
	})
	x := handedToOldProcess(t, vx, slot) // p crashed and restarted

	p, asked := importerFrom(t, x, heldLease(t, "p"), slot)
	logs := captureLog(p)
	p.ho.waits.since[slot].Add(-int64(2 * StableAfter))
	askNow(t, p, slot, asked)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "old owner still holds slots") }, 10*time.Second, time.Millisecond,
		"x answers NONE: handed to p's old process")
	require.Equal(t, ModeImporting, p.State(slot).Mode())
	assert.NotEqual(t, "0", pairsOf(p.HandoffPairs())["handoff_import_slots_stuck"])

	ended, err := p.EndImport(slot)
	require.NoError(t, err)
	assert.True(t, ended)
	assert.Nil(t, p.State(slot), "served by p")
	assert.Equal(t, "+"+releaseNone, releasedTo(x, "p", slot), "x still released nothing: it serves nothing of the slot either")
}

// TestOperatorEndsNoWaitOfASlotItsOldOwnerServes: p imports a slot from
// x, whose own table (older: it has not seen p yet) still names x the
// owner, so x serves it. RL.CLUSTER SETSLOT slot STABLE on p asks x first
// (RL.PEER SERVES) and leaves the wait as it is: ended, it would have
// made p a second server of the slot. Once x's table gives p the slot and
// x has handed it over, x serves it no more, and the wait may end.
func TestOperatorEndsNoWaitOfASlotItsOldOwnerServes(t *testing.T) {
	vp := alive(viewOf(t, 1, []string{"p", "x"}))
	slot := slotWhere(t, "a slot of p's", func(s int) bool { return vp.Table.Owner(s).Name == "p" })
	x, curX := leasedNode(t, viewOf(t, 1, []string{"x"}), &recorder{}, false) // x alone: it owns every slot
	p, _ := leasedNode(t, vp, &askNode{to: x, asked: make(chan string, 1024)}, false)
	st := p.State(slot)
	require.True(t, st != nil && st.Mode() == ModeImporting && st.Peer().Name == "x")
	p.ho.waits.since[slot].Add(-int64(2 * StableAfter))

	assert.Equal(t, "+"+strconv.Itoa(slot), servesTo(x, "p", slot), "x's table names x the owner")
	_, err := p.EndImport(slot)
	var we *WaitError
	require.ErrorAs(t, err, &we, "x serves the slot")
	assert.Equal(t, WaitServed, we.Why)
	n, err := p.EndStuckImports()
	require.NoError(t, err)
	assert.Zero(t, n, "ALL leaves the slots x serves waiting too")
	require.Equal(t, ModeImporting, p.State(slot).Mode())

	curX.Store(alive(viewOf(t, 2, []string{"x", "p"})))
	x.View() // x hands p's slots over (the recorder takes the copies and the DONE)
	require.Eventually(t, func() bool { return servesTo(x, "p", slot) == "+"+releaseNone }, 10*time.Second, time.Millisecond,
		"handed over: x serves the slot no more")
	ended, err := p.EndImport(slot)
	require.NoError(t, err)
	assert.True(t, ended)
}

// servesTo returns n's answer to RL.PEER SERVES from for slot.
func servesTo(n *Node, from string, slot int) string {
	w := &nopWriter{}
	n.peerServes(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerServes), []byte(from), []byte(strconv.Itoa(slot))})
	return w.last
}

// askNode answers RL.PEER RELEASED and SERVES as node to does, and
// everything else OK; each RELEASED's slots go to asked.
type askNode struct {
	to    *Node
	asked chan string
}

func (f *askNode) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		reps[i] = []byte("+OK\r\n")
		switch string(args[1]) {
		case cluster.PeerReleased:
			w := &nopWriter{}
			f.to.peerReleased(&core.Session{Out: w}, args)
			reps[i] = []byte(w.last + "\r\n")
			f.asked <- string(args[3])
		case cluster.PeerServes:
			w := &nopWriter{}
			f.to.peerServes(&core.Session{Out: w}, args)
			reps[i] = []byte(w.last + "\r\n")
		}
	}
	return reps, nil
}

func (f *askNode) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

// TestOperatorEndsEveryStuckImport: RL.CLUSTER SETSLOT ALL STABLE
// (EndStuckImports) ends the imports that have waited StableAfter, but
// for those their old owner serves; it leaves the younger ones waiting,
// takes an old owner that predates RL.PEER SERVES at its RELEASED's
// word, and without the lease ends none.
func TestOperatorEndsEveryStuckImport(t *testing.T) {
	v := alive(viewOf(t, 1, []string{"x", "p"}))
	fw := &noneOwner{asked: make(chan string, 1024)}
	n, cur := leasedNode(t, v, fw, false)
	logs := captureLog(n)
	var mine []int
	for s := range cluster.Slots {
		if v.Table.Owner(s).Name == "x" {
			mine = append(mine, s)
		}
	}
	require.Greater(t, len(mine), 3)
	stuck := mine[:2]
	for _, s := range mine[2:] { // young from now, however long a loaded host took to get here
		n.ho.waits.since[s].Store(n.ho.waits.now())
	}
	for _, s := range stuck {
		n.ho.waits.since[s].Add(-int64(2 * StableAfter))
	}
	lapsed := buildNode(t, cur, fw, cluster.NewLease("x", time.Hour), false)
	_, err := lapsed.EndStuckImports()
	assert.ErrorIs(t, err, ErrNoLease)

	fw.servesReply(t, "+"+strconv.Itoa(stuck[0]))
	ended, err := n.EndStuckImports()
	require.NoError(t, err)
	assert.Equal(t, 1, ended, "p serves the first: left waiting")
	assert.Equal(t, ModeImporting, n.State(stuck[0]).Mode())
	assert.Contains(t, logs.String(), "left slots waiting")
	fw.servesReply(t, "-"+errPeerAuth) // p predates RL.PEER SERVES: its RELEASED's NONE is all there is
	ended, err = n.EndStuckImports()
	require.NoError(t, err)
	assert.Equal(t, 1, ended)
	for _, s := range stuck {
		assert.Nil(t, n.State(s), "slot %d waited StableAfter: ended", s)
	}
	assert.Equal(t, ModeImporting, n.State(mine[2]).Mode(), "a younger import waits on")
	assert.Equal(t, strconv.Itoa(len(stuck)), pairsOf(n.HandoffPairs())["handoff_imports_ended_by_operator"])
	assert.Contains(t, logs.String(), fmt.Sprintf("slots=1 first=[%d] waited_on=[p]", stuck[1]))
	ended, err = n.EndStuckImports()
	require.NoError(t, err)
	assert.Zero(t, ended, "none left")
}

// TestStuckImportsLoggedAfterAnAnswer: an import counts as stuck in INFO
// once it has waited longer than the import wait, but is logged only once
// its old owner had time to answer the first RL.PEER RELEASED: the imports
// of nodes started at once are often released right at the import wait.
func TestStuckImportsLoggedAfterAnAnswer(t *testing.T) {
	n, cur := leasedNode(t, alive(viewOf(t, 1, []string{"x", "p"})), &noneOwner{asked: make(chan string, 1024)}, false)
	logs := captureLog(n)
	slot := slotWhere(t, "a slot of x's", func(s int) bool { return cur.Load().Table.Owner(s).Name == "x" })
	require.Equal(t, ModeImporting, n.State(slot).Mode())
	n.ho.waits.since[slot].Store(n.ho.waits.now() - int64(importWait+releaseRetry/2)) // from now: the host may be slow
	n.logStuck()
	assert.Equal(t, "1", pairsOf(n.HandoffPairs())["handoff_import_slots_stuck"])
	assert.NotContains(t, logs.String(), "longer than the import wait", "asked, not yet answered")
	n.ho.waits.since[slot].Add(-int64(releaseRetry))
	n.logStuck()
	assert.Contains(t, logs.String(), "longer than the import wait")
}

// TestImportWaitSurvivesItsAsks: an import's wait is counted from its
// start, not from its last question to the old owner (each RL.PEER
// RELEASED replaces its state) nor its re-pointing by an ASK; it starts
// anew when the slot imports again after it stopped.
func TestImportWaitSurvivesItsAsks(t *testing.T) {
	var h handoff
	h.waits.origin = time.Now()
	first := &SlotState{mode: ModeImporting, peer: cluster.Node{Name: "p"}}
	h.set(1, first)
	require.Positive(t, h.waits.since[1].Load(), "the wait starts")
	const start = -5 // a start no clock reading gives
	h.waits.since[1].Store(start)
	next := &SlotState{mode: ModeImporting, peer: cluster.Node{Name: "p"}}
	require.True(t, h.swap(1, first, next))
	h.set(1, &SlotState{mode: ModeImporting, peer: cluster.Node{Name: "q"}, past: []string{"p"}})
	assert.EqualValues(t, start, h.waits.since[1].Load(), "the same wait")
	h.set(1, nil)
	h.set(1, first)
	assert.Positive(t, h.waits.since[1].Load(), "a new wait")
}

// noneOwner answers RL.PEER RELEASED with NONE, RL.PEER SERVES as
// servesReply set it (NONE at first; "" fails the call), and everything
// else OK: an old owner that never releases the slot, nor hands it over.
// Each RELEASED's slots go to asked.
type noneOwner struct {
	asked  chan string
	serves atomic.Pointer[string]
}

// servesReply sets the answer to RL.PEER SERVES.
func (f *noneOwner) servesReply(t *testing.T, rep string) {
	t.Helper()
	f.serves.Store(&rep)
}

func (f *noneOwner) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		reps[i] = []byte("+OK\r\n")
		switch string(args[1]) {
		case cluster.PeerReleased:
			reps[i] = []byte("+" + releaseNone + "\r\n")
			f.asked <- string(args[3])
		case cluster.PeerServes:
			rep := "+" + releaseNone
			if p := f.serves.Load(); p != nil {
				rep = *p
			}
			if rep == "" {
				return nil, cluster.ErrUnreachable
			}
			reps[i] = []byte(rep + "\r\n")
		}
	}
	return reps, nil
}

func (f *noneOwner) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

// captureLog makes n log into the returned buffer.
func captureLog(n *Node) *rlstoretest.SyncBuffer {
	b := &rlstoretest.SyncBuffer{}
	n.log = slog.New(slog.NewTextHandler(b, nil))
	return b
}

// pairsOf is ps as strings by key.
func pairsOf(ps []core.Pair) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[p.Key] = fmt.Sprint(p.Val)
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// used is key's count in n's store at now.
func used(t *testing.T, n *Node, key []byte, now time.Time) int64 {
	t.Helper()
	info, ok := n.store.Get(key, now.UnixNano())
	require.True(t, ok, "%s is in the store", key)
	return info.Count
}
