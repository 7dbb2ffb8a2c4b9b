package replica

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/shard"
)

// replyWriter records the last reply, as a RESP line.
type replyWriter struct{ last string }

func (w *replyWriter) WriteError(s string)    { w.last = "-" + s }
func (w *replyWriter) WriteString(s string)   { w.last = "+" + s }
func (w *replyWriter) WriteBulk([]byte)       {}
func (w *replyWriter) WriteBulkString(string) {}
func (w *replyWriter) WriteInt(int)           {}
func (w *replyWriter) WriteInt64(int64)       {}
func (w *replyWriter) WriteUint64(uint64)     {}
func (w *replyWriter) WriteArray(int)         {}
func (w *replyWriter) WriteNull()             {}
func (w *replyWriter) WriteRaw([]byte)        {}
func (w *replyWriter) WriteAny(any)           {}

// clock is a Delegate whose Mono a test moves.
type clock struct{ mono int64 }

func (c *clock) View() *cluster.View     { return nil }
func (c *clock) Importing() bool         { return false }
func (c *clock) Serving() bool           { return true }
func (c *clock) UnixNano() int64         { return time.Now().UnixNano() }
func (c *clock) Mono() int64             { return c.mono }
func (c *clock) Lost(int) (string, bool) { return "", false }
func (c *clock) Handing(int) bool        { return false }

func testReplicator(t *testing.T, d Delegate, maxLag time.Duration) *Replicator {
	t.Helper()
	return testReplicatorAs(t, "a", d, maxLag)
}

// testReplicatorAs is testReplicator for the node named self.
func testReplicatorAs(t *testing.T, self string, d Delegate, maxLag time.Duration) *Replicator {
	t.Helper()
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	copies, err := shard.New(shard.Config{})
	require.NoError(t, err)
	r, err := New(Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: &syncBackup{reply: "+OK\r\n"}, MaxLag: maxLag},
		self, store, slog.New(slog.NewTextHandler(io.Discard, nil)), d)
	require.NoError(t, err)
	return r
}

// TestShipmentOnAnOlderSyncRefused: once a primary's full sync comes on a
// new connection, shipments still arriving on its older one are refused
// (-RESYNC), not imported: a link cut and healed delivers them late, after
// the newer full sync, and they put older states back over the copies
// (TestRedStaleBackupHealed: the backup took the slots over at 1 or 2 of
// 20, with the owner's 20 fully synced to it).
func TestShipmentOnAnOlderSyncRefused(t *testing.T) {
	r := testReplicator(t, &clock{}, 0)
	drop := make([]byte, cluster.Slots/8)
	var old, cur Stream
	w := &replyWriter{}
	r.PeerSync(w, &old, "p", [][]byte{drop, drop})
	require.Equal(t, "+OK", w.last)
	r.PeerCopy(w, &old, nil)
	assert.Equal(t, "+OK", w.last, "a shipment on the connection of the latest full sync")
	r.PeerSync(w, &cur, "p", [][]byte{drop, drop})
	r.PeerCopy(w, &old, nil)
	assert.Equal(t, "-"+ErrResync, w.last, "a late shipment on the older connection")
	r.PeerCopy(w, &cur, nil)
	assert.Equal(t, "+OK", w.last, "a shipment on the newer one")
	var other Stream
	r.PeerSync(w, &other, "q", [][]byte{drop, drop})
	r.PeerCopy(w, &cur, nil)
	assert.Equal(t, "+OK", w.last, "another primary's full sync leaves this one's connection be")
}

// TestFreshOnlyWithinMaxLag: an owner serves a backup's slots until MaxLag
// after the latest moment the backup acknowledged its changes up to (at
// first, when the backup became known); an older acknowledgement never
// takes the deadline back; a slot with no backup is always served.
func TestFreshOnlyWithinMaxLag(t *testing.T) {
	c := &clock{mono: int64(time.Hour)}
	const lag = time.Second
	r := testReplicator(t, c, lag)
	p := newShipPeer(r, cluster.Node{Name: "b"})
	var backupOf [cluster.Slots]uint16
	for s := range backupOf {
		backupOf[s] = noBackup
	}
	backupOf[7] = 1
	r.fresh.Store(&freshTable{backupOf: &backupOf, peers: []*shipPeer{nil, p}})
	start := c.mono
	for _, tc := range []struct {
		name  string
		at    int64
		acked int64 // 0: none
		want  bool
	}{
		{"a new backup: MaxLag from when it became known", start + int64(lag) - 1, 0, true},
		{"past it, with no acknowledgement", start + int64(lag), 0, false},
		{"acknowledged up to 100 ms ago", start + int64(2*lag), start + int64(2*lag) - int64(100*time.Millisecond), true},
		{"an older acknowledgement takes nothing back", start + int64(2*lag), start, true},
		{"MaxLag after the latest", start + int64(3*lag) - int64(100*time.Millisecond), 0, false},
	} {
		if tc.acked != 0 {
			p.extendFresh(tc.acked)
		}
		assert.Equal(t, tc.want, r.Fresh(7, tc.at), "Fresh(slot 7, %s)", tc.name)
		assert.True(t, r.Fresh(8, tc.at), "Fresh(slot 8, no backup, %s)", tc.name)
	}
}

// TestFormerBackupHoldsFreshUntilDropped: when a table change moves a
// slot's backup off a node that stays (b to d), b keeps its copies, as of
// its last acknowledgement, until a full sync's drop reaches it, and its
// own table may still name it the backup, which would take the slot over
// from them at the owner's death. The owner serves the slot only until
// MaxLag after b's last acknowledgement, however fresh the new backup d
// is, unless b acknowledges the drop first. Before, the owner served it as
// long as d acknowledged (the simulation's seed 5).
func TestFormerBackupHoldsFreshUntilDropped(t *testing.T) {
	c := &clock{mono: int64(time.Hour)}
	const lag = time.Second
	r := testReplicator(t, c, lag)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.peers {
			p.close()
		}
	})
	abc, err := cluster.NewTable(1, []cluster.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	require.NoError(t, err)
	abcd, err := cluster.NewTable(2, []cluster.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}})
	require.NoError(t, err)
	slot := -1
	for s := range cluster.Slots {
		ru1, _ := abc.RunnerUp(s)
		ru2, _ := abcd.RunnerUp(s)
		if abc.Owner(s).Name == "a" && abcd.Owner(s).Name == "a" && ru1.Name == "b" && ru2.Name == "d" {
			slot = s
			break
		}
	}
	require.GreaterOrEqual(t, slot, 0, "a slot a owns in both tables, backed up by b, then d")
	r.OnTable(nil, &cluster.View{Self: "a", Table: abc})
	require.True(t, r.Fresh(slot, c.mono), "b is new: MaxLag from when it became known")
	c.mono += int64(lag / 2)
	r.mu.Lock()
	b := r.peers["b"]
	r.mu.Unlock()
	b.extendFresh(c.mono) // b acknowledged everything up to now
	r.OnTable(nil, &cluster.View{Self: "a", Table: abcd})
	c.mono += int64(lag) - 1
	assert.True(t, r.Fresh(slot, c.mono), "b's copies are less than MaxLag behind")
	c.mono++
	r.mu.Lock()
	d := r.peers["d"]
	r.mu.Unlock()
	d.extendFresh(c.mono) // the new backup is up to date
	assert.False(t, r.Fresh(slot, c.mono), "b may still hold copies MaxLag behind, and take the slot over from them")
	b.shipOnce() // the "no longer backup" full sync: b acknowledges the drop
	assert.True(t, r.Fresh(slot, c.mono), "b acknowledged the drop: d's deadline alone counts")
}

// leaseless is a clock whose node holds its lease only while serving.
type leaseless struct {
	clock
	serving bool
}

func (l *leaseless) Serving() bool { return l.serving }

// TestFullSyncWaitsForTheLease: a node that does not hold its lease sends
// no full sync; it does once it holds the lease again. A full sync's
// slots count as held on the backup (HeldBy), and a node without its
// lease knows nothing newer than its table (the simulation's seed 195: a
// node cut off alone, declared dead by the majority, synced its keys from
// before the cut to its backup at the heal, which had served the slots
// since, and whose next takeover promoted them over its own newer keys).
// Before, a full sync went whatever the lease.
func TestFullSyncWaitsForTheLease(t *testing.T) {
	d := &leaseless{clock: clock{mono: int64(time.Hour)}}
	r := testReplicator(t, d, 0)
	sb := r.cfg.Ship.(*syncBackup)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.peers {
			p.close()
		}
	})
	ab, err := cluster.NewTable(1, []cluster.Node{{Name: "a"}, {Name: "b"}})
	require.NoError(t, err)
	r.OnTable(nil, &cluster.View{Self: "a", Table: ab})
	r.mu.Lock()
	b := r.peers["b"]
	r.mu.Unlock()
	require.NotNil(t, b)
	b.shipOnce()
	assert.Empty(t, sb.sent, "no lease: no full sync")
	d.serving = true
	b.shipOnce()
	assert.NotEmpty(t, sb.sent, "the lease held: the full sync goes")
}

// TestFullSyncNamesLostSlots: a full sync drops the backup's copies of a
// slot this node has lost, and neither ships its keys nor names it among
// the slots whose copies follow (held once it ends): it names it LOST,
// with its holder here (see LostAt). The simulation's seed 2363: a
// rejoin's full sync gave its backup the keys of a slot it had lost (23,
// where the node that served it after the rejoin's death left 36), and
// the backup promoted and served them at the rejoin's next death. Before,
// they went as held copies. A backup that predates LOST gets them so
// still: the form without LOST names the slot backed.
func TestFullSyncNamesLostSlots(t *testing.T) {
	ab, err := cluster.NewTable(1, []cluster.Node{{Name: "a"}, {Name: "b"}})
	require.NoError(t, err)
	lost := -1
	for slot := range cluster.Slots {
		if ru, ok := ab.RunnerUp(slot); ok && ab.Owner(slot).Name == "a" && ru.Name == "b" {
			lost = slot
			break
		}
	}
	require.GreaterOrEqual(t, lost, 0)
	bit := byte(1) << (lost % 8)
	for _, old := range []bool{false, true} {
		d := &losing{clock: clock{mono: int64(time.Hour)}, lost: lost}
		store, err := shard.New(shard.Config{})
		require.NoError(t, err)
		copies, err := shard.New(shard.Config{})
		require.NoError(t, err)
		sb := &syncRecorder{old: old}
		r, err := New(Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: sb}, "a", store,
			slog.New(slog.NewTextHandler(io.Discard, nil)), d)
		require.NoError(t, err)
		t.Cleanup(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, p := range r.peers {
				p.close()
			}
		})
		r.OnTable(nil, &cluster.View{Self: "a", Table: ab})
		r.mu.Lock()
		b := r.peers["b"]
		r.mu.Unlock()
		require.NotNil(t, b)
		b.shipOnce()
		var sync [][]byte
		for _, args := range sb.cmds {
			if len(args) > 3 && string(args[1]) == cluster.PeerSync && (!old || len(args) == 5) {
				sync = args
				break
			}
		}
		require.NotNil(t, sync, "a full sync went (old backup %v)", old)
		assert.NotZero(t, sync[2][lost/8]&bit, "the backup drops its copies of the lost slot")
		if old {
			assert.NotZero(t, sync[3][lost/8]&bit, "a backup that predates LOST holds its keys, as before")
			continue
		}
		assert.Zero(t, sync[3][lost/8]&bit, "and counts none of it held")
		require.Len(t, sync, 8, "SYNC drop backed ENDS LOST holder bitmap")
		assert.Equal(t, cluster.PeerSyncLost, string(sync[5]))
		assert.Equal(t, "h", string(sync[6]), "the holder by this node's record")
		assert.NotZero(t, sync[7][lost/8]&bit, "the lost slot, named")
	}
}

// losing is a Delegate that has one slot lost, held by "h".
type losing struct {
	clock
	lost int
}

func (l *losing) Lost(slot int) (string, bool) { return "h", slot == l.lost }

// syncRecorder is a backup that answers OK and records what it is sent;
// old, one that predates LOST, refuses SYNC's form with it.
type syncRecorder struct {
	cmds [][][]byte
	old  bool
}

func (b *syncRecorder) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		b.cmds = append(b.cmds, args)
		reps[i] = []byte("+OK\r\n")
		if b.old && string(args[1]) == cluster.PeerSync && len(args) > 5 {
			reps[i] = []byte("-" + cluster.PeerRefused + "\r\n")
		}
	}
	return reps, nil
}

func (b *syncRecorder) Send(string, uint64, []byte, int, cluster.Replier) {
	panic("not used by a full sync")
}
