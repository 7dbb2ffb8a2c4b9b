package handoff

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// TestJoinerSeedsDeadPrevFromKnown: a new process records, for the known
// members it never had in a table, the slots they own in the table of every
// known member as theirs (deadPrev), and keeps that mark on a slot that
// moves on while it imports it: asked by the slot's next owner, it answers
// its PULL without a DONE and its RELEASED with "ASK" the dead member; the
// member's return clears the mark. The simulation's seed 1508: n4's new
// process, whose first table lacked n2 (paused, its death confirmed, with
// the slot's state), imported the slot as its own; the slot then moved to
// n3's new process, whose PULL n4 answered with a DONE without copies, and
// n3 served it from nothing. Before, a new process recorded no deadPrev.
func TestJoinerSeedsDeadPrevFromKnown(t *testing.T) {
	all := viewOf(t, 1, []string{"x", "r", "d", "c"})
	shared := viewOf(t, 3, []string{"x", "r"})
	back := viewOf(t, 4, []string{"x", "r", "c"})
	slot := slotWhere(t, "a slot of d's that x imports, then c owns with x its backup", func(slot int) bool {
		ru, ok := back.Table.RunnerUp(slot)
		return all.Table.Owner(slot).Name == "d" && shared.Table.Owner(slot).Name == "x" &&
			back.Table.Owner(slot).Name == "c" && ok && ru.Name == "x"
	})
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 2, []string{"x"})) // a new process: alone until it meets the members
	n := nodeWith(t, &cur, func(c *Config) {
		c.Joins, c.Known = true, func() []string { return []string{"c", "d", "r", "x"} }
	})
	cur.Store(shared)
	n.View()
	require.Equal(t, ModeImporting, n.ho.state(slot).Mode(), "x imports the slot its first shared table gives it")
	cur.Store(back)
	n.View()

	_, backed := n.backedUpFor("c", []int{slot})
	assert.Empty(t, backed, "x never had the slot's state, which was d's: no DONE without c's copies")
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), releasedTo(n, "c", slot))

	cur.Store(viewOf(t, 5, []string{"x", "r", "c", "d"}))
	n.View()
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	assert.Equal(t, "c", n.ho.deadPrev[slot], "d is back: its slots' marks go; c, the old owner, may have held it (thirdPrev)")
	assert.True(t, n.ho.guessPrev.Has(slot), "x holds none of c's copies: a guess (askChain)")
}

// nodeWith is testNode with set's changes to its Config.
func nodeWith(t *testing.T, cur *atomic.Pointer[cluster.View], set func(*Config)) *Node {
	t.Helper()
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	copies, err := shard.New(shard.Config{})
	require.NoError(t, err)
	fw := &recorder{}
	cfg := Config{View: cur.Load, Forwarder: fw, Store: store,
		Replicas: &replica.Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: fw},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)), Started: time.Now(), UnixNano: func() int64 { return time.Now().UnixNano() }}
	set(&cfg)
	n, err := New(cfg)
	require.NoError(t, err)
	return n
}

// TestKeptKeysWaitForTheOwnersLease: a node that does not hold its lease
// refuses an IMPORT of kept keys (mode handback or pull) for a slot it
// serves as its own, which would keep its own keys; once it holds its
// lease it takes them, joined with its own (peerImport). The
// simulation's seed 1463: n0, resumed from a pause and not yet aware that
// a majority had declared it dead, kept its 13 of slot 14649 where n4,
// which had served the slot since, pushed 16 and dropped them. Before,
// the IMPORT was answered OK.
func TestKeptKeysWaitForTheOwnersLease(t *testing.T) {
	v := viewOf(t, 2, []string{"x", "r"})
	key := []byte("kept")
	slot := cluster.Slot(key)
	if v.Table.Owner(slot).Name != "x" {
		v = viewOf(t, 2, []string{"x", "q"})
		require.Equal(t, "x", v.Table.Owner(slot).Name, "the key's slot is x's")
	}
	from := v.Table.Nodes()[0].Name
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 1, []string{"x"})) // x served alone, then from joined
	lease := cluster.NewLease("x", time.Minute)
	n := nodeWith(t, &cur, func(c *Config) { c.Lease = lease })
	cur.Store(v)
	n.View()
	require.Nil(t, n.ho.state(slot), "x serves the slot as its own")
	now := time.Now()
	p := window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Hour}
	entry := func(used uint64) shard.Entry {
		return shard.Entry{Key: key, Params: p, State: window.State{uint64(now.UnixNano()), used}}
	}
	require.NoError(t, n.store.Import(entry(13), now.UnixNano()))
	imp := func(mode string) string {
		w := &nopWriter{}
		n.peerImport(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerImport), []byte(from),
			[]byte(mode), []byte(strconv.Itoa(slot)), persistence.AppendEntries(nil, []shard.Entry{entry(16)}, now.UnixNano())})
		return w.last
	}
	used := func() int64 {
		info, ok := n.store.Get(key, now.UnixNano())
		require.True(t, ok)
		return info.Count
	}
	for _, mode := range []string{"handback", "pull"} {
		assert.Equal(t, "-"+errKeepsOwn, imp(mode), "mode %s: x has no lease, and would keep its 13", mode)
		assert.Equal(t, int64(13), used())
	}

	known := []string{"x", from}
	l := lease.Now()
	lease.SentAt(l, known)
	lease.AnsweredAt(l, from, l, true, 0, known)
	require.True(t, n.serving())
	assert.Equal(t, "+OK", imp("handback"), "x holds its lease and takes the kept keys")
	assert.Equal(t, int64(16), used(), "joined with its own: the larger count (see peerImport)")
}

// refuser is a Forwarder whose RL.PEER IMPORT answers the shard's key
// limit's error, as a node at --max-keys does; it counts them.
type refuser struct{ imports atomic.Int32 }

func (f *refuser) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		reps[i] = []byte("+OK\r\n")
		if string(args[1]) == cluster.PeerImport {
			f.imports.Add(1)
			reps[i] = []byte("-ERR import: shard: key or memory limit reached\r\n")
		}
	}
	return reps, nil
}

func (f *refuser) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

// TestKeptKeysBackOffFromARefusingOwner: kept keys that a reachable owner
// refuses are not sent again at each of its RELEASED questions, but after
// a back-off that doubles; after keptTries refusals they are dropped, and
// the slot is released, served from what the owner has. The session's
// review (R3): an IMPORT answered with the key limit's error was sent
// again, all of it, at every question, once a second, and the keys were
// kept for as long as the owner refused them. Before, no back-off nor
// bound.
func TestKeptKeysBackOffFromARefusingOwner(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r"})
	slot := slotWhere(t, "a slot r owns", func(slot int) bool { return v.Table.Owner(slot).Name == "r" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	fw := &refuser{}
	n := nodeWith(t, &cur, func(c *Config) { c.Forwarder = fw })
	n.switchMu.Lock()
	n.ho.refusals.base, n.ho.refusals.tries = time.Hour, 3
	n.switchMu.Unlock()
	r, _ := v.Table.Node("r")
	n.abandon(&Migration{to: r, slots: []int{slot}, first: "reset"}, []int{slot}, cluster.ErrUnreachable)
	require.Eventually(t, func() bool { return fw.imports.Load() == 1 && n.keeps(slot) && !n.pushing.Load() },
		5*time.Second, time.Millisecond, "the first push, refused: the keys are kept")
	for range 5 {
		assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "not released while its keys are kept")
	}
	require.Eventually(t, func() bool { return !n.pushing.Load() }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(1), fw.imports.Load(), "no push during the back-off")

	n.switchMu.Lock()
	n.ho.refusals.base = time.Millisecond
	c := n.ho.refusals.by["r"]
	c.next = time.Time{}
	n.ho.refusals.by["r"] = c
	n.switchMu.Unlock()
	require.Eventually(t, func() bool {
		if !n.pushing.Load() && !n.keeps(slot) {
			return true // a push ran to its end and kept nothing (a push under way takes them)
		}
		n.pushKept()
		return false
	}, 5*time.Second, time.Millisecond, "given up after the third refusal")
	assert.Equal(t, int32(3), fw.imports.Load())
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot), "released: r serves the slot from what it has")
}

// TestHandbacksReplaceUntilTheMemberIsGone: with a lease, a node that
// handed a member's slots back in mode replace still hands it slots in
// mode replace later (a handoff to a third node that the member's return
// re-aims at it), until the member is gone again. The simulation's seed
// 4052: n4's handoff of slot 12850 to n1, refused once n0 came back, went
// to n0 in mode reset, the first handback having forgotten n0's death, and
// n0, not yet aware of it, kept its older keys. Before, the first handback
// forgot the death.
func TestHandbacksReplaceUntilTheMemberIsGone(t *testing.T) {
	all := viewOf(t, 2, []string{"x", "r", "d"})
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 1, []string{"x"}))
	lease := cluster.NewLease("x", time.Minute)
	n := nodeWith(t, &cur, func(c *Config) { c.Lease, c.Replicas = lease, nil })
	known := []string{"d", "r", "x"}
	l := lease.Now()
	lease.SentAt(l, known)
	lease.AnsweredAt(l, "r", l, true, 0, known)
	require.True(t, n.serving())
	cur.Store(all)
	n.View()
	cur.Store(viewOf(t, 3, []string{"x", "r"}, "d"))
	n.View()
	cur.Store(viewOf(t, 4, []string{"x", "r", "d"}))
	n.View()
	n.moves.Wait()
	slot := slotWhere(t, "a slot d owns", func(slot int) bool { return all.Table.Owner(slot).Name == "d" })
	d, _ := all.Table.Node("d")
	n.switchMu.Lock()
	_, died := n.ho.died["d"]
	n.startMigration(d, []int{slot}, nil) // as settle re-aims a slot at d
	first := n.ho.state(slot).mg.first
	n.switchMu.Unlock()
	n.moves.Wait()
	assert.True(t, died, "d's death is remembered after its first handback")
	assert.Equal(t, "replace", first)

	n.switchMu.Lock()
	n.ho.noteDeaths(all, &cluster.View{Self: "x", Table: all.Table, Gone: []cluster.Member{{Node: d, State: cluster.StateLeft}}})
	_, died = n.ho.died["d"]
	n.switchMu.Unlock()
	assert.False(t, died, "d left: forgotten")
}

// TestJoinerHandsUnseenMembersBackInReplace: a new process counts a known
// member it never had in a table as one whose death it saw confirmed, so
// a handoff to it goes in mode replace (and kept keys in mode handback):
// a slot of the member's it serves came by a handback or handoff from a
// node that saw the death, and its keys are newer than the member's. The
// simulation's seed 2222 (on a model that drew less randomness): n4,
// paused, kept its 50 where n2's new process, which never saw it, sent
// 83 in mode pull.
func TestJoinerHandsUnseenMembersBackInReplace(t *testing.T) {
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 1, []string{"x"})) // a new process: alone until it meets the members
	lease := cluster.NewLease("x", time.Minute)
	n := nodeWith(t, &cur, func(c *Config) {
		c.Joins, c.Lease, c.Known = true, lease, func() []string { return []string{"d", "r", "x"} }
	})
	known := []string{"d", "r", "x"}
	l := lease.Now()
	lease.SentAt(l, known)
	lease.AnsweredAt(l, "r", l, true, 0, known)
	lease.AnsweredAt(l, "d", l, true, 0, known)
	require.True(t, n.serving())
	cur.Store(viewOf(t, 2, []string{"x", "r"}))
	n.View()
	all := viewOf(t, 3, []string{"x", "r", "d"})
	slot := slotWhere(t, "a slot d owns", func(slot int) bool { return all.Table.Owner(slot).Name == "d" })
	d, _ := all.Table.Node("d")
	n.switchMu.Lock()
	_, died := n.ho.died["d"]
	n.startMigration(d, []int{slot}, nil) // as a table that has d again would
	first := n.ho.state(slot).mg.first
	n.switchMu.Unlock()
	n.moves.Wait()
	assert.True(t, died, "d, known and never seen, counts as dead")
	assert.Equal(t, "replace", first)
	n.switchMu.Lock()
	_, died = n.ho.died["r"]
	n.switchMu.Unlock()
	assert.False(t, died, "r, seen, does not")
}

// midPush is a Forwarder that runs during before it answers an RL.PEER
// IMPORT, which it refuses as an owner without its lease does.
type midPush struct{ during func() }

func (f *midPush) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		reps[i] = []byte("+OK\r\n")
		if string(args[1]) == cluster.PeerImport {
			f.during()
			reps[i] = []byte("-" + errKeepsOwn + "\r\n")
		}
	}
	return reps, nil
}

func (f *midPush) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

// TestKeptSlotNotReleasedWhilePushed: a RELEASED question the owner asks
// while this node pushes it kept keys finds the slot still kept and
// releases nothing, and a refused push leaves the keys kept. The
// simulation's seed 7721: n1 refused n2's push of slot 2313's keys (43),
// a RELEASED question of n1's in between released the slot, and n1 served
// it from 16. Before, takeKept cleared the marks before the push.
func TestKeptSlotNotReleasedWhilePushed(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r"})
	slot := slotWhere(t, "a slot r owns", func(slot int) bool { return v.Table.Owner(slot).Name == "r" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	var mid atomic.Value
	var n *Node
	fw := &midPush{during: func() { mid.Store(releasedTo(n, "r", slot)) }}
	n = nodeWith(t, &cur, func(c *Config) { c.Forwarder = fw })
	n.switchMu.Lock()
	n.ho.keep(slot)
	n.switchMu.Unlock()
	n.pushKept()
	require.Eventually(t, func() bool { return mid.Load() != nil && !n.pushing.Load() }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "+"+releaseNone, mid.Load(), "asked during the push: still kept, not released")
	assert.True(t, n.keeps(slot), "refused: still kept")
}

// TestJoinerKeepsRestoredKeysOfAMovedImport: a new process whose first
// shared table gives it a slot of a member it never saw imports the slot,
// its data dir's keys of it in its store; when the member comes back and
// the table gives it the slot before the import ends, the process keeps
// those keys and sends them to the member in mode handback, and answers
// the member's PULL with no DONE without them. fences11's process test: a,
// killed and restarted while c was paused past its confirmed death,
// answered c's PULL for the 2650 slots its old process had served with
// its copies (none) and a DONE, and c served its 15 keys of before the
// pause again (135 above the limit). Before, the import was dropped and
// its keys stayed in the store, unsent. Nor does the process name its
// guess r to c's RELEASED (livePrev; see thirdPrev): r, whose table moved
// the slot from x to c, names x, and c's imports went round that circle
// to the end of TestRestartedFencerRemembers.
func TestJoinerKeepsRestoredKeysOfAMovedImport(t *testing.T) {
	shared := viewOf(t, 2, []string{"x", "r"})
	back := viewOf(t, 3, []string{"x", "r", "c"})
	var key []byte
	for i := 0; key == nil; i++ {
		k := []byte("restored:" + strconv.Itoa(i))
		s := cluster.Slot(k)
		if ru, ok := back.Table.RunnerUp(s); ok && ru.Name == "x" && back.Table.Owner(s).Name == "c" && shared.Table.Owner(s).Name == "x" {
			key = k
		}
	}
	slot := cluster.Slot(key)
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 1, []string{"x"})) // a new process: alone until it meets the members
	var fw *recorder
	n := nodeWith(t, &cur, func(c *Config) {
		c.Joins, c.Known = true, func() []string { return []string{"c", "r", "x"} }
		fw = c.Forwarder.(*recorder)
	})
	now := time.Now()
	p := window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Hour}
	require.NoError(t, n.store.Import(shard.Entry{Key: key, Params: p, State: window.State{uint64(now.UnixNano()), 100}}, now.UnixNano())) // its data dir's
	cur.Store(shared)
	n.View()
	require.Equal(t, ModeImporting, n.ho.state(slot).Mode(), "x imports the slot its first shared table gives it")
	n.pushing.Store(true) // as if a push ran: none starts until the checks below
	cur.Store(back)
	n.View()

	_, backed := n.backedUpFor("c", []int{slot})
	assert.Empty(t, backed, "x's store holds the slot's keys: no DONE without them")
	n.switchMu.Lock()
	assert.Empty(t, n.ho.deadPrev[slot], "x holds the keys it served last: it names no guess as their holder")
	n.switchMu.Unlock()
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "c", slot), "kept here: neither released nor asked of the guess r")
	n.pushing.Store(false)
	n.pushKept()
	require.Eventually(t, func() bool { return slices.Contains(fw.commands(), cluster.PeerDone+" "+strconv.Itoa(slot)) },
		5*time.Second, time.Millisecond, "the kept keys go to c")
	assert.Contains(t, fw.commands(), cluster.PeerImport+" handback", "c counts as dead here: x's keys replace its own")
}

// TestJoinerSeedsDeadPrevFromSeenMembers: a new process (n1) whose first
// shared table lacks known members n2 and n3 records, for a slot that p, a
// member it sees, would own with them in the table and that its table
// gives o, p as the slot's deadPrev: it answers o's RELEASED with "ASK p".
// The simulation's seed 3092: such a process (n1) released the slot to
// o's import (a guess, aimed at n1 as the slot's backup), and o served it
// from 0 while p (paused) held its keys. Before, only n2's and n3's
// slots were recorded.
func TestJoinerSeedsDeadPrevFromSeenMembers(t *testing.T) {
	all := viewOf(t, 1, []string{"n1", "n0", "n2", "n3", "n4"})
	shared := viewOf(t, 3, []string{"n1", "n0", "n4"})
	slot := slotWhere(t, "a slot one member owns with n2 and n3 in the table, and another without", func(slot int) bool {
		p, o := all.Table.Owner(slot).Name, shared.Table.Owner(slot).Name
		return p != o && p != "n1" && o != "n1" && shared.Table.Has(p)
	})
	p, o := all.Table.Owner(slot).Name, shared.Table.Owner(slot).Name
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 2, []string{"n1"})) // a new process: alone until it meets the members
	n := nodeWith(t, &cur, func(c *Config) {
		c.Joins, c.Known = true, func() []string { return []string{"n0", "n1", "n2", "n3", "n4"} }
	})
	for _, m := range shared.Table.Nodes() { // every member alive: no backup declared dead (askTheBackup)
		shared.Members = append(shared.Members, cluster.Member{Node: m, State: cluster.StateAlive})
	}
	cur.Store(shared)
	n.View()

	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" "+p+" "+strconv.Itoa(slot), releasedTo(n, o, slot),
		"n1 never saw the slot's owner with every known member hand it over: ask it")
}
