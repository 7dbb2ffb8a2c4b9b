package replica

import (
	"context"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBackup answers every RL.PEER SYNC with its reply and records each
// one's argument count.
type syncBackup struct {
	reply string
	sent  []int
}

func (b *syncBackup) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		b.sent = append(b.sent, len(args))
		reps[i] = []byte(b.reply)
	}
	return reps, nil
}

func (b *syncBackup) Send(string, uint64, []byte, int, cluster.Replier) {
	panic("not used by sendSync")
}

// TestSendSyncRetriesOnlyAnOldNode: a full sync's RL.PEER SYNC carries the
// backed bitmap and ENDS; only cluster.PeerRefused, what a node from
// before either answers a longer form, gets the next shorter one. A backup that
// keeps no replicas, or any other NOPERM, is not asked again in the old
// form: before, any reply starting with NOPERM was.
func TestSendSyncRetriesOnlyAnOldNode(t *testing.T) {
	drop, backed := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	for _, tc := range []struct {
		reply string
		want  []int // the argument counts of the SYNCs sent
	}{
		{"+OK\r\n", []int{5}},
		{"-" + cluster.PeerRefused + "\r\n", []int{5, 4, 3}},
		{"-" + cluster.PeerNoReplicas + "\r\n", []int{5}},
		{"-NOPERM this command is for cluster peers only\r\n", []int{5}},
		{"-NOPERM bad cluster credentials, and more\r\n", []int{5}},
	} {
		b := &syncBackup{reply: tc.reply}
		p := &shipPeer{r: &Replicator{cfg: Config{Ship: b}}}
		ends, err := p.sendSync(cluster.Node{Name: "b", Addr: "127.0.0.1:1"}, drop, backed, nil)
		assert.Equal(t, tc.reply == "+OK\r\n", ends, "the sync ends with SYNCED on %q", tc.reply)
		assert.Equal(t, tc.want, b.sent, "SYNCs sent on %q", tc.reply)
		if tc.reply[0] == '-' {
			assert.Error(t, err, tc.reply)
		} else {
			assert.NoError(t, err, tc.reply)
		}
	}
}

// TestForgetHeldAtRejoin: a node that learns it was declared dead counts
// none of its copies as held any more, and refuses further shipments on
// every primary's connection (-RESYNC), until a full sync brings them
// again. Its copies are as old as its death: the owners that saw it
// confirmed moved their slots' backups elsewhere, and one that dies now
// would leave it promoting them (the simulation's seed 5).
func TestForgetHeldAtRejoin(t *testing.T) {
	r := testReplicator(t, &clock{}, 0)
	backed := make([]byte, cluster.Slots/8)
	backed[0] = 1 // slot 0
	var st Stream
	w := &replyWriter{}
	r.PeerSync(w, &st, "p", [][]byte{make([]byte, cluster.Slots/8), backed})
	require.Equal(t, "+OK", w.last)
	require.True(t, r.HeldBy(0, "p"))
	r.ForgetHeld()
	assert.False(t, r.HeldBy(0, "p"), "copies from before this node's death are not held")
	r.PeerCopy(w, &st, nil)
	assert.Equal(t, "-"+ErrResync, w.last, "a shipment on the connection from before: the primary syncs again")
	var again Stream
	r.PeerSync(w, &again, "p", [][]byte{make([]byte, cluster.Slots/8), backed})
	assert.True(t, r.HeldBy(0, "p"), "a full sync brings them again")
	r.PeerCopy(w, &again, nil)
	assert.Equal(t, "+OK", w.last)
}

// TestHeldOnlyOnceTheSyncEnds: a full sync sent with ENDS drops the
// backup's copies at once, and its backed slots count as held only at
// RL.PEER SYNCED: an owner that dies, or is cut off, in the middle leaves
// them lost on the backup, not served from part of their keys. A SYNCED
// on a connection whose sync a newer one replaced is refused (-RESYNC),
// and a slot whose copies went meanwhile (this node's table moved it)
// does not count. A sync without ENDS (an owner from before it) counts at
// once, as before. Before, every sync counted from its SYNC on.
func TestHeldOnlyOnceTheSyncEnds(t *testing.T) {
	r := testReplicator(t, &clock{}, 0)
	drop, backed := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	backed[0] = 1 | 2 // slots 0 and 1
	ends := []byte("ends")
	w := &replyWriter{}
	var st Stream
	r.PeerSync(w, &st, "p", [][]byte{drop, backed, ends})
	require.Equal(t, "+OK", w.last)
	assert.False(t, r.HeldBy(0, "p"), "a sync under way: its keys are not all here yet")
	r.forgetSyncs(func(slot int) bool { return slot == 1 })
	r.PeerSynced(w, &st)
	assert.Equal(t, "+OK", w.last)
	assert.True(t, r.HeldBy(0, "p"), "the sync ended")
	assert.False(t, r.HeldBy(1, "p"), "its copies went before the end")

	var cut, newer Stream
	r.PeerSync(w, &cut, "p", [][]byte{backed, backed, ends})
	assert.False(t, r.HeldBy(0, "p"), "a new sync drops the copies")
	r.PeerSync(w, &newer, "p", [][]byte{backed, backed, ends})
	r.PeerSynced(w, &cut)
	assert.Equal(t, "-"+ErrResync, w.last, "the end of a sync a newer one replaced")
	assert.False(t, r.HeldBy(0, "p"))
	r.PeerSynced(w, &newer)
	assert.True(t, r.HeldBy(0, "p"))

	var old Stream
	r.PeerSync(w, &old, "q", [][]byte{drop, backed})
	assert.True(t, r.HeldBy(0, "q"), "an owner from before ENDS: held from the SYNC on")
	r.PeerSynced(w, &old)
	assert.Equal(t, "-"+ErrResync, w.last, "no end without ENDS")
}

// TestDeathEndsTheStreams: a member that a new table drops as dead gets
// -RESYNC on the connections it shipped on before, until a full sync
// (which waits for its lease): what it ships there once it runs again
// (a pause, a cut) is from before its death, and would land on newer
// copies, such as those this node kept of what it handed back to it (the
// simulation's seed 3138). Another primary's stream goes on, and so does
// one that left.
func TestDeathEndsTheStreams(t *testing.T) {
	r := testReplicator(t, &clock{}, 0)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.peers {
			p.close()
		}
	})
	abcd, err := cluster.NewTable(1, []cluster.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}})
	require.NoError(t, err)
	r.OnTable(nil, &cluster.View{Self: "a", Table: abcd})
	w := &replyWriter{}
	streams := map[string]*Stream{}
	for _, p := range []string{"b", "c", "d"} {
		streams[p] = &Stream{}
		r.PeerSync(w, streams[p], p, [][]byte{make([]byte, cluster.Slots/8)})
		require.Equal(t, "+OK", w.last)
	}
	ac, err := cluster.NewTable(2, []cluster.Node{{Name: "a"}, {Name: "c"}})
	require.NoError(t, err)
	r.OnTable(nil, &cluster.View{Self: "a", Table: ac, Gone: []cluster.Member{
		{Node: cluster.Node{Name: "b"}, State: cluster.StateDead}, {Node: cluster.Node{Name: "d"}, State: cluster.StateLeft}}})
	r.PeerCopy(w, streams["b"], nil)
	assert.Equal(t, "-"+ErrResync, w.last, "the dead member's stream from before its death")
	r.PeerCopy(w, streams["c"], nil)
	assert.Equal(t, "+OK", w.last, "a live member's stream")
	r.PeerCopy(w, streams["d"], nil)
	assert.Equal(t, "+OK", w.last, "a member that left")
	var again Stream
	r.PeerSync(w, &again, "b", [][]byte{make([]byte, cluster.Slots/8)})
	r.PeerCopy(w, &again, nil)
	assert.Equal(t, "+OK", w.last, "a full sync starts a new stream")
}

// TestSyncNamesLostSlots: a full sync's LOST pairs mark the slots the
// owner has lost, with their holders (LostAt), until the owner's next
// full sync drops them: the backup answers the owner's PULL for them with
// no DONE, and its RELEASED with "ASK" the holder (package handoff). A
// malformed LOST is refused. Before, the backup knew nothing of them, and
// answered a restarted owner's PULL with a DONE without copies.
func TestSyncNamesLostSlots(t *testing.T) {
	r := testReplicator(t, &clock{}, 0)
	drop, lost := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	drop[0], lost[0] = 1|2, 2 // the owner's slots 0 and 1; 1 lost, held by h
	w := &replyWriter{}
	var st Stream
	r.PeerSync(w, &st, "p", [][]byte{drop, make([]byte, cluster.Slots/8), []byte("ENDS"), []byte("LOST"), []byte("h"), lost})
	require.Equal(t, "+OK", w.last)
	holder, ok := r.LostAt(1, "p")
	assert.True(t, ok, "slot 1 is lost at p")
	assert.Equal(t, "h", holder)
	_, ok = r.LostAt(1, "q")
	assert.False(t, ok, "not at another owner")
	_, ok = r.LostAt(0, "p")
	assert.False(t, ok)

	r.PeerSync(w, &st, "p", [][]byte{drop, make([]byte, cluster.Slots/8), []byte("ENDS")})
	_, ok = r.LostAt(1, "p")
	assert.False(t, ok, "the owner's next full sync names it lost no more")

	r.PeerSync(w, &st, "p", [][]byte{drop, make([]byte, cluster.Slots/8), []byte("ENDS"), []byte("LOST"), []byte("h")})
	assert.Equal(t, "-"+errSyntax, w.last, "LOST without a bitmap")
}
