package replica

import (
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

// clock is a Delegate for a replicator that ships nothing.
type clock struct{}

func (c *clock) View() *cluster.View { return nil }
func (c *clock) Importing() bool     { return false }
func (c *clock) UnixNano() int64     { return time.Now().UnixNano() }

func testReplicator(t *testing.T, d Delegate) *Replicator {
	t.Helper()
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	copies, err := shard.New(shard.Config{})
	require.NoError(t, err)
	r, err := New(Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: &syncBackup{reply: "+OK\r\n"}},
		"a", store, slog.New(slog.NewTextHandler(io.Discard, nil)), d)
	require.NoError(t, err)
	return r
}

// TestShipmentOnAnOlderSyncRefused: once a primary's full sync comes on a
// new connection, shipments still arriving on its older one are refused
// (-RESYNC), not imported: a link cut and healed delivers them late, after
// the newer full sync, and they put older states back over the copies
// (TestRedStaleBackupHealed with the keys used up at the cut: the backup
// took the slots over at 1 or 2 of 20, the owner's 20 fully synced to it).
func TestShipmentOnAnOlderSyncRefused(t *testing.T) {
	r := testReplicator(t, &clock{})
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
