package global

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// clock is a Delegate with a fixed clock and no policies.
type clock int64

func (c clock) UnixNano() int64            { return int64(c) }
func (clock) Policy([]byte) *policy.Policy { return nil }

// silent is a Forwarder that never answers: no test here sends a batch.
type silent struct{}

func (silent) Forward(ctx context.Context, _ string, _ [][][]byte) ([][]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (silent) Send(string, uint64, []byte, int, cluster.Replier) {}

func newTestNode(t *testing.T) *Node {
	t.Helper()
	st, err := shard.New(shard.Config{})
	require.NoError(t, err)
	rn, err := New(Config{Name: "eu", Peers: []Peer{{Name: "us", Addr: "127.0.0.1:1"}, {Name: "ap", Addr: "127.0.0.1:2"}},
		Sync: 100 * time.Millisecond, Timeout: time.Second, Model: region.Defaults(0, 1), Keys: [][]byte{[]byte("k")},
		Forwarder: silent{}, Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, clock(time.Now().UnixNano()))
	require.NoError(t, err)
	return rn
}

// TestSyncAllocs: a sync that finds every link busy (so makes no batch)
// allocates nothing: its scratch slices are kept between syncs. It
// allocated the links' ready flags and the batches' slice every time.
func TestSyncAllocs(t *testing.T) {
	rn := newTestNode(t)
	for _, l := range rn.links {
		if l != nil {
			l.busy.Store(true)
		}
	}
	allocs := testing.AllocsPerRun(100, rn.SyncOnce)
	assert.Zero(t, allocs, "SyncOnce with every link busy: %v allocations per sync, want 0", allocs)
}

// TestLinkEntriesInMaxMemory: the entries of the batches the links carry
// and keep until acknowledged count in the key store's memory, which
// --maxmemory bounds, as the region table's keys do.
func TestLinkEntriesInMaxMemory(t *testing.T) {
	rn := newTestNode(t)
	now := int64(rn.d.(clock)) + int64(10*time.Minute) // past the recovery of a new region
	lim := region.Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	for i := range 100 {
		d, err := rn.Decide([]byte("k"+strconv.Itoa(i)), lim, now, 1, false)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	before := rn.store.Stats().Bytes
	rn.SyncOnce() // a batch to each of us and ap, neither answers
	grew := rn.store.Stats().Bytes - before
	entry := int64(unsafe.Sizeof(region.Entry{}))
	assert.GreaterOrEqual(t, grew, 2*100*entry, "the two links' 100 entries each count in the store's memory")
}

// TestLinkRotates: a link whose region's acknowledgements named its
// nodes (a clustered region) tries the next when the one it sends to
// stops answering, and comes round to --region-peers' address again; a
// link that knows no other address stays where it is.
func TestLinkRotates(t *testing.T) {
	l := &link{addr: "a:1"}
	l.rotate()
	assert.Equal(t, "a:1", l.target(), "nothing else known")
	l.learn([]string{"a:1", "b:1", "c:1"})
	var got []string
	for range 4 {
		l.rotate()
		got = append(got, l.target())
	}
	assert.Equal(t, []string{"b:1", "c:1", "a:1", "b:1"}, got)
	l.learn(nil)
	l.rotate()
	assert.Equal(t, "c:1", l.target(), "an acknowledgement without addresses keeps those known")
}
