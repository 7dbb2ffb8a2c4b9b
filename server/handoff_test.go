package server

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// useToLimit decides each key until it is at its limit of 5 an hour.
func useToLimit(t *testing.T, c *redis.Client, keys []string) {
	t.Helper()
	for _, k := range keys {
		for range 5 {
			require.Equal(t, int64(1), slide5(t, c, k), "%s: within its limit", k)
		}
	}
}

func slide5(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	rep, err := c.Do(context.Background(), "RL.SLIDE", key, 5, 3600).Int64Slice()
	require.NoError(t, err, key)
	return rep[0]
}

type slideReply struct {
	allowed int64
	err     error
}

// slide5Async is slide5 on a goroutine of its own, whose answer comes on
// the channel returned. The goroutine reports its error rather than calling
// require: FailNow would end only that goroutine, and the test would wait
// for its answer until the binary's timeout, hiding the failure.
func slide5Async(c *redis.Client, key string) <-chan slideReply {
	reply := make(chan slideReply, 1)
	go func() {
		rep, err := c.Do(context.Background(), "RL.SLIDE", key, 5, 3600).Int64Slice()
		if err == nil && len(rep) == 0 {
			err = fmt.Errorf("%s: an empty reply", key)
		}
		if err != nil {
			reply <- slideReply{err: err}
			return
		}
		reply <- slideReply{allowed: rep[0]}
	}()
	return reply
}

// slideAnswer waits for the answer of slide5Async.
func slideAnswer(t *testing.T, reply <-chan slideReply) int64 {
	t.Helper()
	r := <-reply
	require.NoError(t, r.err)
	return r.allowed
}

// assertAtLimit checks through every client that each key admits nothing more.
func assertAtLimit(t *testing.T, cs []*redis.Client, keys []string, why string) {
	t.Helper()
	for _, k := range keys {
		for _, c := range cs {
			assert.Equal(t, int64(0), slide5(t, c, k), "%s: %s", k, why)
		}
	}
}

func clients(t *testing.T, nodes ...*testNode) []*redis.Client {
	var cs []*redis.Client
	for _, n := range nodes {
		cs = append(cs, newClient(t, n.addr, 2))
	}
	return cs
}

// keyOwnedBy returns the first of prefix0, prefix1, ... that owner owns,
// and its slot.
func keyOwnedBy(t *testing.T, nodes []*testNode, owner *testNode, prefix string) (string, int) {
	t.Helper()
	for _, k := range testKeys(prefix, 100) {
		if ownerOf(nodes, k) == owner {
			return k, cluster.Slot([]byte(k))
		}
	}
	t.Fatalf("%s owns none of the 100 keys %s*", owner.name, prefix)
	return "", 0
}

// waitCut waits until n has handed over slots slots in all and its
// migrations have ended: a cut counts its slots before it drops its copy.
func waitCut(t *testing.T, n *testNode, slots int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := n.srv.ho.Stats()
		return st.SlotsOut == slots && st.Moves == 0
	}, deadline, time.Millisecond, "%s hands the slots over", n.name)
}

func testKeys(prefix string, n int) []string {
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprint(prefix, i))
	}
	return keys
}

// TestHandoffJoinKeepsState: keys at their limit stay at their limit
// after a join moves their slots, whichever node is asked; the old owners
// count the keys they handed over.
func TestHandoffJoinKeepsState(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	keys := testKeys("join:", 60)
	useToLimit(t, clients(t, nodes[0])[0], keys)
	nodes = append(nodes, startTestNode(t, "node2", []string{nodes[0].ml.GossipAddr()}, clusterOpts{}))
	waitOwners(t, nodes, 3)
	waitSettled(t, nodes)
	moved := 0
	for _, k := range keys {
		if ownerOf(nodes, k) == nodes[2] {
			moved++
		}
	}
	require.Positive(t, moved, "some keys moved to the new node")
	assertAtLimit(t, clients(t, nodes...), keys, "at its limit after the join")
	out := nodes[0].srv.ho.Stats().KeysOut + nodes[1].srv.ho.Stats().KeysOut
	assert.Equal(t, int64(moved), out, "keys handed over")
	assert.Equal(t, int64(moved), nodes[2].srv.ho.Stats().KeysIn)
	assert.Zero(t, nodes[2].srv.ho.Stats().ImportTimeouts)
	total := int64(0)
	for _, n := range nodes {
		total += n.srv.cfg.Store.Len()
	}
	assert.Equal(t, int64(len(keys)), total, "each key is held by one node: the old owners dropped what they handed over")
}

// TestHandoffLeaveKeepsState: a node that hands its slots over and then
// leaves loses none of its keys' state. Between the handoff and the
// announcement, the other nodes still route to it, and it forwards to
// the new owners, which serve ahead of their tables.
func TestHandoffLeaveKeepsState(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	var keys []string
	for _, k := range testKeys("leave:", 200) {
		if ownerOf(nodes, k) == nodes[1] {
			keys = append(keys, k)
		}
	}
	require.NotEmpty(t, keys)
	cs := clients(t, nodes[0], nodes[2])
	useToLimit(t, cs[0], keys)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	require.NoError(t, nodes[1].srv.HandOff(ctx))
	assert.Zero(t, nodes[1].srv.cfg.Store.Len(), "the leaver dropped what it handed over")
	assertAtLimit(t, append(cs, clients(t, nodes[1])...), keys, "handed over, not yet announced")
	require.NoError(t, nodes[1].ml.Leaving(time.Second))
	waitOwners(t, []*testNode{nodes[0], nodes[2]}, 2)
	assertAtLimit(t, cs, keys, "at its limit after the leave")
	assert.Equal(t, int64(len(keys)), nodes[1].srv.ho.Stats().KeysOut)
}

// holdForwards holds back forwards at hop level 2 until released, to put a
// request sent back to a slot's old owner after that owner's cut.
type holdForwards struct {
	cluster.Forwarder
	held    chan struct{} // a forward is being held
	release chan struct{}
}

func (h *holdForwards) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	if len(cmds) == 1 && bytes.Equal(cmds[0][0], []byte("RL.HOP")) && string(cmds[0][1]) == "2" {
		h.held <- struct{}{}
		<-h.release
	}
	return h.Forwarder.Forward(ctx, addr, cmds)
}

// TestHandoffRequestCrossesCut: a request the new owner sends back to the
// old owner while it imports, which reaches the old owner after its cut,
// is not run on the old owner's stale copy: the old owner answers
// HANDEDOFF and the new owner runs it on the state it took over.
func TestHandoffRequestCrossesCut(t *testing.T) {
	hold := &holdForwards{held: make(chan struct{}), release: make(chan struct{})}
	a := startTestNode(t, "node0", nil, clusterOpts{})
	b := startTestNode(t, "node1", []string{a.ml.GossipAddr()}, clusterOpts{wrap: func(f cluster.Forwarder) cluster.Forwarder {
		hold.Forwarder = f
		return hold
	}})
	nodes := []*testNode{a, b}
	waitOwners(t, nodes, 2)
	waitSettled(t, nodes)
	key, slot := keyOwnedBy(t, nodes, a, "cut:")
	cs := clients(t, a, b)
	ca, cb := cs[0], cs[1]
	useToLimit(t, ca, []string{key})
	// b imports the slot from a, as a new owner does.
	self, _ := a.ml.View().Table.Node("node0")
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: self, Until: time.Now().Add(time.Hour)}))
	reply := slide5Async(cb, key)
	<-hold.held // b has sent the request back to a
	// a hands the slot to b: b takes it, a cuts.
	to, _ := a.ml.View().Table.Node("node1")
	before := a.srv.ho.Stats().SlotsOut
	a.srv.ho.Probe().Migrate(to, []int{slot}, true) // as in a leave, the table names a until the cut
	waitCut(t, a, before+1)
	assert.Equal(t, handoff.ModeMoved, a.srv.ho.State(slot).Mode())
	assert.Equal(t, handoff.ModeAdopted, b.srv.ho.State(slot).Mode())
	close(hold.release) // the request reaches a after its cut
	assert.Equal(t, int64(0), slideAnswer(t, reply), "run on b's complete copy: still at its limit")
	assert.Equal(t, int64(1), b.srv.ho.Stats().CrossedCut, "a answered HANDEDOFF")
}

// TestHandoffGatedRequestWaits: a request for a slot whose last copy is
// being made waits for the cut and then goes to the new owner.
func TestHandoffGatedRequestWaits(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, a, "gate:")
	ca := clients(t, a)[0]
	useToLimit(t, ca, []string{key})
	to, _ := a.ml.View().Table.Node(b.name)
	mg := handoff.NewMigration(to, []int{slot}) // gated
	a.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeCopying, Peer: to, Mg: mg}))
	reply := slide5Async(ca, key)
	select {
	case <-reply:
		t.Fatal("a request for a gated slot ran")
	case <-time.After(50 * time.Millisecond): // bounded wait to show it does not run; not ordering
	}
	_, _, err := a.srv.ho.Probe().CopyFrom(a.srv.cfg.Store, to, []int{slot}, true, "reset")
	require.NoError(t, err)
	mg.Open(handoff.ModeMoved)
	assert.Equal(t, int64(0), slideAnswer(t, reply), "went to the new owner, with the state")
}

// TestHandoffTransaction: a transaction on a moving slot runs where the
// slot is served: at the old owner while the new one imports, and at the
// new owner once the old one has cut, whichever node is asked; its key
// keeps one count throughout.
func TestHandoffTransaction(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	a, b := nodes[0], nodes[1]
	key, slot := keyOwnedBy(t, nodes, a, "txn:")
	cs := clients(t, a, b)
	ca, cb := cs[0], cs[1]
	txn := func(c *redis.Client) int64 {
		t.Helper()
		cmds, err := c.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
			p.Do(context.Background(), "RL.SLIDE", key, 3, 3600)
			return nil
		})
		require.NoError(t, err)
		return must(cmds[0].(*redis.Cmd).Int64Slice())[0]
	}
	self, _ := a.ml.View().Table.Node(a.name)
	b.srv.ho.Probe().Set(slot, handoff.NewState(handoff.StateOf{Mode: handoff.ModeImporting, Peer: self, Until: time.Now().Add(time.Hour)}))
	assert.Equal(t, int64(1), txn(cb), "sent to the old owner")
	assert.Equal(t, int64(1), a.srv.cfg.Store.Len())
	assert.Zero(t, b.srv.cfg.Store.Len())
	before := a.srv.ho.Stats().SlotsOut
	to, _ := a.ml.View().Table.Node(b.name)
	a.srv.ho.Probe().Migrate(to, []int{slot}, true)
	waitCut(t, a, before+1)
	assert.Equal(t, int64(1), txn(ca), "the old owner sends it to the new one")
	assert.Equal(t, int64(1), txn(cb), "the new owner runs it")
	assert.Equal(t, int64(0), txn(ca), "one count: at its limit")
	assert.Zero(t, a.srv.cfg.Store.Len(), "the old owner holds no copy")
}

// loseDoneReply delivers RL.PEER DONE but loses its answer, as a
// connection that breaks after the peer has run it does.
type loseDoneReply struct{ cluster.Forwarder }

func (l loseDoneReply) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	reps, err := l.Forwarder.Forward(ctx, addr, cmds)
	if err == nil && len(cmds[0]) > 1 && string(cmds[0][1]) == "DONE" {
		return nil, fmt.Errorf("%w: the answer was lost", cluster.ErrUnreachable)
	}
	return reps, err
}

// TestHandoffDoneAnswerLost: when the new owner took the slots but its OK
// never came back, the old owner does not serve them again (two nodes
// would then serve them): it sends their requests on, as after a cut.
func TestHandoffDoneAnswerLost(t *testing.T) {
	a := startTestNode(t, "node0", nil, clusterOpts{wrapMover: func(f cluster.Forwarder) cluster.Forwarder { return loseDoneReply{f} }})
	b := startTestNode(t, "node1", []string{a.ml.GossipAddr()}, clusterOpts{})
	nodes := []*testNode{a, b}
	waitOwners(t, nodes, 2)
	waitSettled(t, nodes)
	key, slot := keyOwnedBy(t, nodes, a, "lost:")
	cs := clients(t, a, b)
	ca, cb := cs[0], cs[1]
	useToLimit(t, ca, []string{key})
	to, _ := a.ml.View().Table.Node(b.name)
	a.srv.ho.Probe().Migrate(to, []int{slot}, true)
	require.Eventually(t, func() bool {
		st := a.srv.ho.State(slot)
		return st != nil && st.Mode() == handoff.ModeMoved
	}, deadline, time.Millisecond, "a sends the slot's requests on, and does not serve it again")
	assert.Equal(t, handoff.ModeAdopted, b.srv.ho.State(slot).Mode(), "b took the slot")
	require.NoError(t, a.srv.cfg.Store.Import(shardTombstone(key), 0)) // a's copy, were it served, would admit
	assertAtLimit(t, []*redis.Client{ca, cb}, []string{key}, "served by b alone")
}

func shardTombstone(key string) shard.Entry { return shard.Entry{Key: []byte(key)} }

// TestHandoffFromUnseenNodeRefused: a joiner takes a handoff only from a
// node its view has. The old owner sees the joiner first (the joiner asked
// it to join) and may hand it its slots while the joiner's view still holds
// only itself, which counts nothing it serves. Were the DONE taken then,
// the joiner would mark the slots importing from that node once its view
// caught up, and wait importWait for a copy the node, having cut, never
// sends again (TestHandoffJoinKeepsState's import stall under load).
func TestHandoffFromUnseenNodeRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var view atomic.Pointer[cluster.View]
	self := cluster.Node{Name: "node2", Addr: ln.Addr().String()}
	old := cluster.Node{Name: "node0", Addr: "127.0.0.1:1"} // never dialled: node2 sends nothing
	alone, err := cluster.NewTable(1, []cluster.Node{self})
	require.NoError(t, err)
	view.Store(&cluster.View{Self: self.Name, Table: alone, Members: []cluster.Member{{Node: self}}})
	peers := cluster.NewPeers(cluster.PeersConfig{Name: self.Name, Secret: []byte("k"), Timeout: 2 * time.Second})
	t.Cleanup(peers.Close)
	s := newTestServer(t, Config{Listener: ln, Cluster: &ClusterConfig{View: view.Load, Forwarder: peers, Joins: true, Secret: []byte("k")}})
	addr := serveTest(t, s)
	s.ClusterChanged()

	both, err := cluster.NewTable(2, []cluster.Node{old, self})
	require.NoError(t, err)
	var slots []int
	for slot := 0; len(slots) < 3; slot++ {
		if both.Owner(slot).Name == self.Name {
			slots = append(slots, slot)
		}
	}
	spec := handoff.FormatSlots(slots)
	sender := cluster.NewPeers(cluster.PeersConfig{Name: old.Name, Secret: []byte("k"), Timeout: 2 * time.Second})
	t.Cleanup(sender.Close)
	hand := func() string {
		t.Helper()
		payload := persistence.AppendEntries([]byte{}, nil, time.Now().UnixNano())
		reps, err := sender.Forward(context.Background(), addr, [][][]byte{
			{[]byte("RL.PEER"), []byte("IMPORT"), []byte(old.Name), []byte("reset"), []byte(spec), payload},
			{[]byte("RL.PEER"), []byte("DONE"), []byte(old.Name), []byte(spec)},
		})
		require.NoError(t, err)
		require.Equal(t, "+OK\r\n", string(reps[0]), "the copy is stored")
		return string(reps[1])
	}
	assert.True(t, strings.HasPrefix(hand(), "-ERR"), "a DONE from a node node2 does not see yet is refused")

	view.Store(&cluster.View{Self: self.Name, Table: both, Members: []cluster.Member{{Node: old}, {Node: self}}})
	s.ClusterChanged()
	for _, slot := range slots {
		st := s.ho.State(slot)
		require.NotNil(t, st, "slot %d", slot)
		assert.Equal(t, handoff.ModeImporting, st.Mode(), "slot %d: node2 waits for node0's copy", slot)
	}
	require.Equal(t, "+OK\r\n", hand(), "node0 retries, and node2 now takes the slots")
	for _, slot := range slots {
		assert.Nil(t, s.ho.State(slot), "slot %d: served by node2, importing nothing", slot)
	}
}
