package handoff

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// recorder is a Forwarder that answers every command OK and records the
// RL.PEER IMPORTs sent, with their mode, and DONEs, with their slots.
type recorder struct {
	mu   sync.Mutex
	sent []string
}

func (f *recorder) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		switch sub := string(args[1]); sub {
		case cluster.PeerImport:
			f.sent = append(f.sent, sub+" "+string(args[3])) // its mode
		case cluster.PeerDone:
			f.sent = append(f.sent, sub+" "+string(args[len(args)-1]))
		}
		reps[i] = []byte("+OK\r\n")
	}
	return reps, nil
}

func (f *recorder) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

func (f *recorder) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// nopWriter is a resp.Writer that keeps its last simple reply.
type nopWriter struct{ last string }

func (w *nopWriter) WriteError(s string)    { w.last = "-" + s }
func (w *nopWriter) WriteString(s string)   { w.last = "+" + s }
func (w *nopWriter) WriteBulk([]byte)       {}
func (w *nopWriter) WriteBulkString(string) {}
func (w *nopWriter) WriteInt(int)           {}
func (w *nopWriter) WriteInt64(int64)       {}
func (w *nopWriter) WriteUint64(uint64)     {}
func (w *nopWriter) WriteArray(int)         {}
func (w *nopWriter) WriteNull()             {}
func (w *nopWriter) WriteRaw([]byte)        {}
func (w *nopWriter) WriteAny(any)           {}

// TestPullAnsweredOnlyWithCopies: a node answers a restarted process's
// RL.PEER PULL with DONE for a slot its table gave that process at the
// slot's owner's death only if it holds the process's copies of it (its
// full sync brought them); for a slot it knows nothing else of, it
// answers as before, copies or not. The simulation's cause A (seeds 32,
// 405, 930): a restarted process, whose first view came from a node that
// saw a slot's owner die, owns the slot in its first table without having
// seen that death; the slot's state is with the dead owner (paused, or
// cut off), its copies died with the crashed process, and the runner-up's
// DONE without copies let the process serve the slot from nothing.
// Before, that DONE went.
func TestPullAnsweredOnlyWithCopies(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "r", "d"})
	v2 := viewOf(t, 2, []string{"x", "r"}, "d")
	fromDead, fresh := -1, -1
	for s := range cluster.Slots {
		switch {
		case fromDead < 0 && v1.Table.Owner(s).Name == "d" && v2.Table.Owner(s).Name == "r":
			fromDead = s
		case fresh < 0 && v1.Table.Owner(s).Name == "r":
			fresh = s
		}
	}
	require.True(t, fromDead >= 0 && fresh >= 0)
	n, fw, _ := movedNode(t, v1, v2)

	pull := func(slots ...int) {
		t.Helper()
		w := &nopWriter{}
		n.peerPull(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerPull), []byte("r"), []byte(formatSlots(slots))})
		require.Equal(t, "+OK", w.last)
	}
	_, backed := n.backedUpFor("r", []int{fromDead})
	assert.Empty(t, backed, "x holds no copies of r's for a slot d's death gave r: no DONE")
	pull(fromDead)
	time.Sleep(50 * time.Millisecond) // sendCopies runs on a goroutine of its own
	assert.Empty(t, fw.commands(), "no IMPORT, no DONE: the restarted process's import waits")
	_, backed = n.backedUpFor("r", []int{fresh})
	assert.Equal(t, []int{fresh}, backed, "a slot x knows nothing else of: DONE, as on a cluster's first formation")
	n.switchMu.Lock()
	n.ho.keep(fresh)
	n.switchMu.Unlock()
	_, backed = n.backedUpFor("r", []int{fresh})
	assert.Empty(t, backed, "keys x keeps for r go by their own push (kept.go), not a DONE without them (seed 500)")
	n.switchMu.Lock()
	n.ho.unkeep(fresh)
	n.ho.forgone[fresh/64] |= 1 << (fresh % 64)
	n.switchMu.Unlock()
	_, backed = n.backedUpFor("r", []int{fresh})
	assert.Empty(t, backed, "a slot x lost (forgone): its state is elsewhere, no DONE without r's copies")
	n.switchMu.Lock()
	n.ho.forgone[fresh/64] &^= 1 << (fresh % 64)
	n.switchMu.Unlock()

	// r's full sync names the slot as backed here: x holds r's copies of it.
	drop, bits := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	bits[fromDead/8] |= 1 << (fromDead % 8)
	w := &nopWriter{}
	var st replica.Stream
	n.Replicator().PeerSync(w, &st, "r", [][]byte{drop, bits})
	require.Equal(t, "+OK", w.last)
	_, backed = n.backedUpFor("r", []int{fromDead})
	assert.Equal(t, []int{fromDead}, backed, "x holds r's copies: r served the slot since d's death")
	pull(fromDead)
	require.Eventually(t, func() bool { return len(fw.commands()) == 2 }, 5*time.Second, time.Millisecond)
	got := fw.commands()
	assert.Equal(t, cluster.PeerImport+" pull", got[0])
	assert.Equal(t, cluster.PeerDone+" "+strconv.Itoa(fromDead), got[1])
}

// TestReleasedAsksTheDeadOwner: a node asked RL.PEER RELEASED for a slot
// its table gave the asker because the slot's owner died, holding none of
// the asker's copies of it, answers "ASK" that dead owner instead of
// releasing it; once it holds the asker's copies (the asker served the
// slot and synced it here), it releases it. The simulation's cause A
// (seed 32): a restarted process whose first table lacked the dead owner
// imported the slot from its runner-up, which sent no DONE (no copies)
// and then released it: the process served it from nothing while the
// dead owner, cut off, held its keys. Before, the runner-up released it.
func TestReleasedAsksTheDeadOwner(t *testing.T) {
	n, slot := afterDeadOwner(t)
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), releasedTo(n, "r", slot),
		"x holds no copies of r's: the slot's state was d's")

	drop, bits := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	bits[slot/8] |= 1 << (slot % 8)
	w := &nopWriter{}
	var st replica.Stream
	n.Replicator().PeerSync(w, &st, "r", [][]byte{drop, bits})
	require.Equal(t, "+OK", w.last)
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot), "r served the slot since and synced it here: released")
}

// TestForgetStopsAskingTheDeadOwner: after RL.CLUSTER FORGET, a node no
// longer answers RELEASED with "ASK" the forgotten owner: the asker, whose
// table lacks it, would have the slot lost again, though the operator
// said that owner will not come back.
func TestForgetStopsAskingTheDeadOwner(t *testing.T) {
	n, slot := afterDeadOwner(t)
	require.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), releasedTo(n, "r", slot), "before the forget: ASK d")
	n.ForgetLost()
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot), "d is forgotten: released")
}

// afterDeadOwner returns node x, with replicas, once the death of d gave
// r a slot of d's, and that slot.
func afterDeadOwner(t *testing.T) (*Node, int) {
	t.Helper()
	v1, v2, slot := deadOwnerViews(t)
	n, _, _ := movedNode(t, v1, v2)
	return n, slot
}

// deadOwnerViews returns x's views before and after d's death, {x, r, d}
// and {x, r} with d dead, and a slot d owned that r owns once d died.
func deadOwnerViews(t *testing.T) (*cluster.View, *cluster.View, int) {
	t.Helper()
	v1 := viewOf(t, 1, []string{"x", "r", "d"})
	v2 := viewOf(t, 2, []string{"x", "r"}, "d")
	slot := slotWhere(t, "a slot d owned that r owns once d died", func(slot int) bool {
		return v1.Table.Owner(slot).Name == "d" && v2.Table.Owner(slot).Name == "r"
	})
	return v1, v2, slot
}

// slotWhere returns the first slot for which ok holds; what names the
// slot the test needs, for its failure.
func slotWhere(t *testing.T, what string, ok func(slot int) bool) int {
	t.Helper()
	for slot := range cluster.Slots {
		if ok(slot) {
			return slot
		}
	}
	require.Fail(t, "no slot: "+what)
	return -1
}

// keyWhere returns a key, prefix and a number, whose slot ok accepts.
func keyWhere(t *testing.T, prefix, what string, ok func(slot int) bool) []byte {
	t.Helper()
	for i := range 100000 {
		if k := []byte(prefix + strconv.Itoa(i)); ok(cluster.Slot(k)) {
			return k
		}
	}
	require.Fail(t, "no key: "+what)
	return nil
}

// releasedTo returns n's answer to RL.PEER RELEASED from for slot, asked
// as this version asks an import not sent on (PAST naming no one).
func releasedTo(n *Node, from string, slot int) string {
	return releasedAs(n, from, slot, cluster.ReleasedPast)
}

// releasedAs returns n's answer to RL.PEER RELEASED from for slot with
// rest after the slot (KEEP, PAST and its nodes; none: the oldest form).
func releasedAs(n *Node, from string, slot int, rest ...string) string {
	w := &nopWriter{}
	args := [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerReleased), []byte(from), []byte(strconv.Itoa(slot))}
	for _, r := range rest {
		args = append(args, []byte(r))
	}
	n.peerReleased(&core.Session{Out: w}, args)
	return w.last
}

// TestReleasedAsksTheBackup: a node asked RL.PEER RELEASED for a slot
// that it neither handed to the asker nor backs up, whose backup in its
// table is declared dead and not confirmed, answers "ASK" that backup; it
// releases the slot once the backup is alive again, or when it handed the
// slot to the asker. The simulation's seed 779: n0, whose table was older than
// what happened to the slot (cut off alone, it never saw the owner n2 die
// and its backup n3 serve the slot), released it to n2's new process,
// which had guessed n0 as the backup because its first table lacked n3,
// and n2 served it from nothing. Before, any node whose table named the
// asker the owner released the slot.
func TestReleasedAsksTheBackup(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r", "b"})
	slot := slotWhere(t, "a slot r owns and b backs up", func(slot int) bool {
		ru, ok := v.Table.RunnerUp(slot)
		return ok && ru.Name == "b" && v.Table.Owner(slot).Name == "r"
	})
	v.Members = []cluster.Member{{Node: cluster.Node{Name: "r"}}, {Node: cluster.Node{Name: "x"}}} // b declared dead, pending
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	n := testNode(t, &cur, &recorder{})
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" b "+strconv.Itoa(slot), releasedTo(n, "r", slot), "x never held the slot: b holds its copies")
	alive := *v2epoch(t, v, 2)
	alive.Members = append([]cluster.Member{{Node: cluster.Node{Name: "b"}}}, v.Members...)
	cur.Store(&alive)
	n.View()
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot), "b alive here: the asker's table has it too, and b answers itself")
	cur.Store(v2epoch(t, v, 3))
	n.View()
	n.noteHolder("r", []int{slot})
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot), "x handed the slot to r: released")
}

// TestKeptKeysOfAConfirmedDeathReplace: a rejoining node that waits for a
// slot's handback, keeping its keys, sends them in mode handback (they
// replace the owner's) when the table gives the slot to a member whose
// death it saw confirmed: it served the slot after that death, and the
// member served nothing after its lease ran out. The simulation's seed
// 885: n2 sent them in mode pull when n0 came back, and n0 kept its
// older keys and served from them. Before, such keys always went in mode
// pull.
func TestKeptKeysOfAConfirmedDeathReplace(t *testing.T) {
	xop := viewOf(t, 1, []string{"x", "o", "p"})
	xp := viewOf(t, 2, []string{"x", "p"}, "o")
	back := viewOf(t, 3, []string{"x", "o", "p"})
	slot := slotWhere(t, "a slot of o's that x takes over at o's death", func(slot int) bool { return xop.Table.Owner(slot).Name == "o" && xp.Table.Owner(slot).Name == "x" })
	n, fw, cur := movedNode(t, xop, xp)
	p, _ := xp.Table.Node("p")
	awaitHandback(n, slot, p) // a rejoin's wait for the handback
	cur.Store(back)
	n.View()
	require.Eventually(t, func() bool { return !n.keeps(slot) && !n.pushing.Load() },
		5*time.Second, time.Millisecond, "the kept keys go to o (without a DONE: p may hold newer ones, TestKeptBehindGoesWithoutDone)")
	assert.Contains(t, fw.commands(), cluster.PeerImport+" handback", "x saw o's death confirmed: its keys replace o's")
}

// v2epoch is v with its table dealt again at epoch.
func v2epoch(t *testing.T, v *cluster.View, epoch uint64) *cluster.View {
	t.Helper()
	tb, err := cluster.NewTable(epoch, v.Table.Nodes())
	require.NoError(t, err)
	nv := *v
	nv.Table = tb
	return &nv
}

// TestLostOwnSlotComesBackKeepingItsKeys: a rejoin's own slot, lost while
// it waited keeping its keys, imports from its holder when the holder is
// back still keeping them: its keys go to the slot's next owner if the
// table moves it on (slotChange keeps them), and the rejoin's proof of an
// unconfirmed death serves them. The simulation's seed 500: the mark was
// dropped, n1 sent its newest keys nowhere when the table gave the slot to
// n4's new process, and its DONE without copies let n4 serve the slot from
// nothing. Before, the import from the returned holder kept nothing.
func TestLostOwnSlotComesBackKeepingItsKeys(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "h"})
	slot := slotWhere(t, "a slot x owns", func(slot int) bool { return v.Table.Owner(slot).Name == "x" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	n := testNode(t, &cur, &recorder{})
	var lost [cluster.Slots / 64]uint64
	lost[slot/64] |= 1 << (slot % 64)
	n.switchMu.Lock()
	n.ho.set(slot, nil) // its first view's import ended
	n.takeover.Store(n.takeover.Load().WithLost(&lost))
	n.ho.holder[slot] = "h"
	n.ho.lostFrom[slot/64] |= 1 << (slot % 64)
	n.ho.ownLost[slot/64] |= 1 << (slot % 64)
	n.lostComeBackLocked(v)
	st := n.ho.state(slot)
	n.switchMu.Unlock()
	require.NotNil(t, st, "imported from the holder that is back")
	assert.Equal(t, ModeImporting, st.Mode())
	assert.True(t, st.keep, "a rejoin's own slot: its keys stay the slot's state")
	assert.False(t, n.takeover.Load().Lost(slot))
}

// TestAbandonKeepsTheKeys: a handoff abandoned after migrateWait keeps its
// slots' keys for their owner (kept.go), and the node answers no RELEASED
// for them; a leaving node's drops them as before. The simulation's seed
// 17: an old owner without its lease for the 10 s, then cut off, dropped
// the keys and released the slot, and the new owner served it from
// nothing. Before, every abandoned handoff dropped them.
func TestAbandonKeepsTheKeys(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r"})
	slot := slotWhere(t, "a slot r owns", func(slot int) bool { return v.Table.Owner(slot).Name == "r" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	n := testNode(t, &cur, &recorder{})
	r, _ := v.Table.Node("r")
	n.pushing.Store(true) // as if a push ran: none starts, and the kept marks stay put for the test
	n.abandon(&Migration{to: r, slots: []int{slot}, first: "reset"}, []int{slot}, cluster.ErrUnreachable)
	assert.True(t, n.keeps(slot), "its keys are kept for r")
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "not released: its keys are on their way")

	n.switchMu.Lock()
	assert.False(t, n.ho.keptReplace.Has(slot), "a handoff in mode reset: its keys go in mode pull")
	n.ho.unkeep(slot)
	n.switchMu.Unlock()
	n.abandon(&Migration{to: r, slots: []int{slot}, first: "replace"}, []int{slot}, cluster.ErrUnreachable)
	n.switchMu.Lock()
	assert.True(t, n.ho.keptReplace.Has(slot), "a handback in mode replace: its keys go in mode handback")
	n.ho.unkeep(slot)
	n.switchMu.Unlock()
	n.ho.leaving.Store(true)
	n.abandon(&Migration{to: r, slots: []int{slot}, first: "reset"}, []int{slot}, cluster.ErrUnreachable)
	assert.False(t, n.keeps(slot), "a leaving node's new owner serves from what it has")
}

// TestReleasedAsksALivePreviousOwner: a node that was importing a slot
// from p when its table moved the slot on to o answers o's RELEASED with
// "ASK p" and, as its backup, o's PULL with no DONE, unless it holds o's
// copies: it never learned whether p handed the slot over. The
// simulation's seed 4934: such a node answered the PULL with a DONE
// without copies, and o served its older keys while p kept the newer
// ones for it. Before, it released the slot and answered the PULL.
func TestReleasedAsksALivePreviousOwner(t *testing.T) {
	xpo := viewOf(t, 1, []string{"x", "p", "o"})
	xp := viewOf(t, 2, []string{"x", "p"})
	lost := slotWhere(t, "a slot x owns without o and o with it", func(slot int) bool {
		return xp.Table.Owner(slot).Name == "x" && xpo.Table.Owner(slot).Name == "o"
	})
	var cur atomic.Pointer[cluster.View]
	cur.Store(xp)
	n := testNode(t, &cur, &recorder{})
	p, _ := xp.Table.Node("p")
	n.switchMu.Lock()
	n.ho.set(lost, &SlotState{mode: ModeImporting, peer: p, until: time.Now().Add(time.Hour)}) // imported from p, not ended
	n.switchMu.Unlock()
	nv := v2epoch(t, xpo, 3)
	for _, m := range nv.Table.Nodes() { // every member alive: no backup declared dead (askTheBackup)
		nv.Members = append(nv.Members, cluster.Member{Node: m, State: cluster.StateAlive})
	}
	cur.Store(nv)
	n.View()
	want := "+" + releaseNone + " " + cluster.ReleasedAsk + " p " + strconv.Itoa(lost)
	assert.Equal(t, want, releasedTo(n, "o", lost), "its import from p never ended: ask p")
	_, backed := n.backedUpFor("o", []int{lost})
	assert.Empty(t, backed, "x backs it up for o now: no DONE without o's copies")
}

// TestThirdPrevNamesAnOldOwnerThatServed: a node whose table moves a
// slot from p, alive, to o records p as the slot's deadPrev (thirdPrev),
// unless it holds the slot itself (it hands the slot over, or keeps its
// keys). The simulation's seed 1985: n1 released 11822 to n3's new
// process while n2, paused, held 87. Where it holds none of p's copies
// (p's full sync, which waits for p's lease, names the slots p served),
// the mark is a guess (guessPrev), named only to an asker that p did not
// send on already (askChain): on a cold start, tables of a moment gave
// slots to nodes that never served them, and two such nodes named each
// other to the new owner forever (CI's TestSplitTwoOfFour at f036ac8).
func TestThirdPrevNamesAnOldOwnerThatServed(t *testing.T) {
	xp := viewOf(t, 1, []string{"x", "p"})
	xpo := viewOf(t, 2, []string{"x", "p", "o"})
	var pToO []int
	for slot := range cluster.Slots {
		if xp.Table.Owner(slot).Name == "p" && xpo.Table.Owner(slot).Name == "o" {
			pToO = append(pToO, slot)
		}
	}
	require.GreaterOrEqual(t, len(pToO), 4, "slots p owns without o and o with it")
	served, unserved, kept, handing := pToO[0], pToO[1], pToO[2], pToO[3]
	noInc := func(string) uint64 { return 0 }
	held := func(slot int, owner string) bool { return owner == "p" && slot != unserved }
	var h handoff
	h.noteDeadPrev(nil, xp, noInc, held)
	h.keep(kept)
	p, _ := xp.Table.Node("p")
	mg := &Migration{to: p, slots: []int{handing}, started: time.Now()}
	mg.phase.Store(int32(ModeCopying))
	h.set(handing, &SlotState{mode: ModeCopying, peer: p, mg: mg})
	h.noteDeadPrev(xp, xpo, noInc, held)
	assert.Equal(t, "p", h.deadPrev[served], "moved from p, which served it, to o: p")
	assert.False(t, h.guessPrev.Has(served), "p's copies here: p served it, named to any asker")
	assert.Equal(t, "p", h.deadPrev[unserved], "no copies of p's: p may have held it all the same")
	assert.True(t, h.guessPrev.Has(unserved), "no copies of p's: a guess, named only off the question's PAST")
	assert.Empty(t, h.deadPrev[kept], "its keys are kept here: it answers for them")
	assert.Empty(t, h.deadPrev[handing], "handed over from here: it answers for it")
}

// TestKeptSlotBackKeepsItsKeys: a slot whose keys a node (n0) kept for
// its owner r (n1), and that the next table gives back to the node, is
// imported from r keeping the node's keys: an IMPORT in mode pull (r's
// kept keys, or a backup's copies) only fills keys it lacks. The
// simulation's seed 2456: such a node's 30 were replaced by the old
// owner's 16, kept from before it was cut off. Before, the import
// replaced them. And should the table move the slot on before the import
// ends, the node keeps its keys for the new owner again (seed 2360: it
// released the slot, which was served from 0).
func TestKeptSlotBackKeepsItsKeys(t *testing.T) {
	xr := viewOf(t, 1, []string{"n0", "n1"})
	xro := viewOf(t, 2, []string{"n0", "n1", "n3"})
	slot := slotWhere(t, "a slot n1 owns with n3 in the table, and n0 without", func(slot int) bool {
		return xro.Table.Owner(slot).Name == "n1" && xr.Table.Owner(slot).Name == "n0"
	})
	var cur atomic.Pointer[cluster.View]
	cur.Store(xro)
	n := testNode(t, &cur, &recorder{})
	n.View()
	r, _ := xro.Table.Node("n1")
	n.pushing.Store(true) // as if a push ran: none starts, and the kept marks stay put for the test
	n.abandon(&Migration{to: r, slots: []int{slot}, first: "reset"}, []int{slot}, cluster.ErrUnreachable)
	require.True(t, n.keeps(slot), "its keys are kept for n1")

	cur.Store(v2epoch(t, xr, 3))
	n.View()
	st := n.ho.state(slot)
	require.NotNil(t, st, "n0 imports the slot from n1")
	assert.Equal(t, ModeImporting, st.Mode())
	assert.True(t, st.keep, "keeping its keys: they are the slot's state")
	own, _ := n.servedSlots([]int{slot})
	assert.True(t, own.Has(slot), "an IMPORT in mode pull only fills keys n0 lacks")

	cur.Store(v2epoch(t, xro, 4)) // the slot moves on before the import ended
	n.View()
	assert.True(t, n.keeps(slot), "n0's keys are the slot's state: kept for n1 again")
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "n1", slot), "not released: its keys are on their way")
}
