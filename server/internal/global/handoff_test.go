package global

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// fakeCluster is eu's membership: every node named, all alive, and the
// owner of every key as the test sets it.
type fakeCluster struct {
	self      string
	names     []string
	owner     *int // index in names
	importing *bool
}

func (c fakeCluster) Deciding() func(int) bool {
	return func(int) bool { return c.importing == nil || !*c.importing }
}

func (c fakeCluster) Topology() Topology {
	addrs := make([]string, len(c.names))
	for i, n := range c.names {
		addrs[i] = n + ":1"
	}
	return Topology{Self: c.self, Names: c.names, Addrs: addrs, View: 1, Owner: func([]byte) int { return *c.owner }}
}

// inProcess carries RL.PEER REGION between the Nodes of one process, by
// address ("a:1" is node a's); every other address does not answer. hold,
// if set, is called with each payload first.
type inProcess struct {
	nodes map[string]*Node
	hold  func(payload []byte)
}

func (f *inProcess) Forward(_ context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	payload := cmds[0][2]
	if f.hold != nil {
		f.hold(payload)
	}
	n := f.nodes[addr]
	if n == nil {
		return nil, errors.New("no answer")
	}
	ack, refusal := n.Receive(payload, false)
	if refusal != "" {
		return [][]byte{[]byte("-" + refusal + "\r\n")}, nil
	}
	return [][]byte{fmt.Appendf(nil, "$%d\r\n%s\r\n", len(ack), ack)}, nil
}

func (*inProcess) Send(string, uint64, []byte, int, cluster.Replier) {}

// newClusterNode is node name of eu, a cluster of names, with us as the
// other region (which never answers).
func newClusterNode(t *testing.T, name string, names []string, owner *int, fw cluster.Forwarder) *Node {
	t.Helper()
	st, err := shard.New(shard.Config{})
	require.NoError(t, err)
	rn, err := New(Config{Name: "eu", Peers: []Peer{{Name: "us", Addr: "us:1"}},
		Sync: 100 * time.Millisecond, Timeout: time.Second, Model: region.Defaults(0, 1), Keys: [][]byte{[]byte("k")},
		Forwarder: fw, Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Cluster: fakeCluster{self: name, names: names, owner: owner}}, clock(time.Now().UnixNano()))
	require.NoError(t, err)
	return rn
}

// TestGainPullsOldOwnersUnits: eu's b owns a key and admits its reserve
// (25 of L = 100; us never answers); the key's slot moves to a, whose
// first decision gains it. a's sync asks b for what it holds of the slot
// (msgPull) and, at the sync after b answered, takes it: a counts b's 25
// as eu's own (the view's remaining is 50, with us's reserve). Without
// the pull a counted none of them: 74, and it admitted.
func TestGainPullsOldOwnersUnits(t *testing.T) {
	owner := 1 // b
	fw := &inProcess{nodes: map[string]*Node{}}
	names := []string{"a", "b"}
	a, b := newClusterNode(t, "a", names, &owner, fw), newClusterNode(t, "b", names, &owner, fw)
	fw.nodes["a:1"], fw.nodes["b:1"] = a, b
	now := int64(a.d.(clock)) + int64(10*time.Minute) // past the recovery of a new region
	lim := region.Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	k := []byte("k")
	decide := func(n *Node, peek bool) window.Decision {
		d, err := n.Decide(k, lim, now, 1, peek)
		require.NoError(t, err)
		return d
	}
	require.False(t, decide(b, false).Allowed, "b's first decision gains the slot")
	require.Eventually(t, func() bool {
		b.SyncOnce() // asks a, which holds nothing; the sync after its answer gains the slot
		return decide(b, true).Remaining > 0
	}, 10*time.Second, time.Millisecond, "b gains the slot")
	admitted := 0
	for decide(b, false).Allowed {
		admitted++
	}
	require.Equal(t, 25, admitted, "b admits its reserve: us never answers")

	owner = 0 // the slot moves to a
	no := func(int) bool { return false }
	b.OnTable(no, no)
	a.OnTable(func(int) bool { return true }, no)
	assert.Zero(t, decide(a, true).Remaining, "a's first decision: it gains the slot, and waits")
	require.Eventually(t, func() bool {
		a.SyncOnce() // starts the pull; the sync after its answer gains the slot
		return decide(a, true).Remaining > 0
	}, 10*time.Second, time.Millisecond, "a gains the slot")
	assert.Equal(t, int64(50), decide(a, true).Remaining, "L less b's 25, now eu's own here, and us's reserve of 25")
	assert.Equal(t, int64(1), b.handed.Load(), "b answered one pull")
	assert.Positive(t, a.taken.Load())
	assert.Zero(t, a.pullFails.Load())
}

// TestFanOutPartsInMaxMemory: the parts of a batch a gateway fans out
// count in the key store's memory (--maxmemory) until the owners answer,
// and no longer after.
func TestFanOutPartsInMaxMemory(t *testing.T) {
	owner := 1 // every key is b's
	held, release := make(chan struct{}), make(chan struct{})
	fw := &inProcess{nodes: map[string]*Node{}, hold: func(p []byte) {
		if len(p) > 0 && p[0] == msgPart {
			close(held)
			<-release
		}
	}}
	a := newClusterNode(t, "a", []string{"a", "b"}, &owner, fw) // b does not answer
	lim := region.Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	batch := &region.Batch{Seq: 1, SentAt: 1, Epoch: 1}
	for i := range 1000 {
		batch.Entries = append(batch.Entries, region.Entry{Key: fmt.Sprint("k", i), Limit: lim, Bucket: 1, Count: 1})
	}
	hdr := a.rc.Header("us")
	payload := region.AppendBatch(nil, hdr, batch)
	before := a.store.Stats().Bytes
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = a.Receive(payload, false)
	}()
	<-held
	during := a.store.Stats().Bytes - before
	close(release)
	wg.Wait()
	after := a.store.Stats().Bytes - before
	t.Logf("a fan-out of 1,000 entries to a node that answers late: %d bytes counted while out, %d after", during, after)
	assert.GreaterOrEqual(t, during, int64(1000*unsafe.Sizeof(region.Entry{})), "the part's entries count while it is out")
	assert.Zero(t, after, "and are let go when the fan-out ends")
	assert.Equal(t, int64(1), a.partFails.Load())
}

// TestRefusedToo: the refusals of the entries a node counted, mapped back
// to the batch's indexes, with the entries of the slots it imports.
func TestRefusedToo(t *testing.T) {
	// batch 0..7, importing 1, 4, 5: kept are 0 2 3 6 7 (kept indexes 0..4)
	assert.Equal(t, []int{1, 3, 4, 5, 7}, refusedToo([]int{2, 4}, []int{1, 4, 5}))
	assert.Equal(t, []int{0, 1, 4, 5}, refusedToo([]int{0}, []int{1, 4, 5}))
	assert.Equal(t, []int{1, 4, 5, 6}, refusedToo([]int{3}, []int{1, 4, 5}))
	assert.Equal(t, []int{0, 1}, refusedToo(nil, []int{0, 1}))
}

// TestImportingRefused: a node refuses the other regions' entries of the
// slots it is importing (their old owner still decides them until the
// cut): they stay unacknowledged at the sender. Once it no longer
// imports, it counts them.
func TestImportingRefused(t *testing.T) {
	owner, importing := 0, true
	st, err := shard.New(shard.Config{})
	require.NoError(t, err)
	a, err := New(Config{Name: "eu", Peers: []Peer{{Name: "us", Addr: "us:1"}},
		Sync: 100 * time.Millisecond, Timeout: time.Second, Model: region.Defaults(0, 1), Keys: [][]byte{[]byte("k")},
		Forwarder: &inProcess{}, Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Cluster: fakeCluster{self: "a", names: []string{"a"}, owner: &owner, importing: &importing}}, clock(time.Now().UnixNano()))
	require.NoError(t, err)
	lim := region.Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	batch := &region.Batch{Seq: 1, SentAt: 1, Epoch: 1, Entries: []region.Entry{{Key: "k", Limit: lim, Bucket: 1, Count: 3}}}
	receive := func() *region.Ack {
		body, refusal := a.Receive(region.AppendBatch(nil, a.rc.Header("us"), batch), false)
		require.Empty(t, refusal)
		_, ack, err := region.ReadAck(body)
		require.NoError(t, err)
		return ack
	}
	assert.Equal(t, []int{0}, receive().Refused, "importing: refused")
	assert.Zero(t, a.st.Keys(), "and not counted")
	importing = false
	batch.Seq = 2
	assert.Empty(t, receive().Refused, "after the cut: counted")
	assert.Equal(t, 1, a.st.Keys())
}

// TestOnTableKeepsLeavingSlots: a slot the table gives another node stays
// served while this node still hands it over (its copy phase), and is no
// longer served at the first view after that, whoever owns it then.
func TestOnTableKeepsLeavingSlots(t *testing.T) {
	owner := 0
	a := newClusterNode(t, "a", []string{"a", "b"}, &owner, &inProcess{})
	a.gate.served.set(7)
	a.gate.served.set(8)
	yes, no := func(int) bool { return true }, func(int) bool { return false }
	a.OnTable(no, func(s int) bool { return s == 7 }) // both go to b; 7 is still being copied
	assert.True(t, a.gate.served.has(7), "7: in its copy phase, still decided here")
	assert.False(t, a.gate.served.has(8), "8: handed over")
	a.OnTable(yes, no) // 7 was cut, and comes back
	assert.False(t, a.gate.served.has(7), "7 comes back after its cut: its first decision gains it again")
}
