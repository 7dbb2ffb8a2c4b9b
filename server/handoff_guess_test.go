package server

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJoinerImportFollowsItsBackup: a restarted process whose first view
// has one of the two other members imports all its slots from that one,
// its guess of their backup. Once its view has the third member, the
// slots that member backs up must be imported from it: its PULL answer's
// DONE ends their import. Before, the import stayed on the first guess,
// which sends nothing for them, so the backup's DONE was refused ("is
// imported from") and every request for them waited out importWait (5 s)
// and a RELEASED round: the CLUSTERDOWN and client timeouts of
// TestQuickRestartUnderLoad/first_node and TestRestartFirstNodeRejoins's
// kill -9 case in fresh-clone CI.
func TestJoinerImportFollowsItsBackup(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var view atomic.Pointer[cluster.View]
	self := cluster.Node{Name: "node0", Addr: ln.Addr().String()}
	b := cluster.Node{Name: "node1", Addr: "127.0.0.1:1"} // PULLs to b and c are refused: c answers by hand below
	c := cluster.Node{Name: "node2", Addr: "127.0.0.1:1"}
	table := func(epoch uint64, nodes ...cluster.Node) *cluster.View {
		tb, err := cluster.NewTable(epoch, nodes)
		require.NoError(t, err)
		v := &cluster.View{Self: self.Name, Table: tb}
		for _, n := range nodes {
			v.Members = append(v.Members, cluster.Member{Node: n})
		}
		return v
	}
	view.Store(table(1, self))
	peers := cluster.NewPeers(cluster.PeersConfig{Name: self.Name, Secret: []byte("k"), Timeout: 2 * time.Second})
	t.Cleanup(peers.Close)
	s := newTestServer(t, Config{Listener: ln, Cluster: &ClusterConfig{View: view.Load, Forwarder: peers, Joins: true, Secret: []byte("k")}})
	addr := serveTest(t, s)
	s.ClusterChanged()

	ab, abc := table(2, self, b), table(3, self, b, c)
	var slots []int
	for slot := 0; slot < cluster.Slots && len(slots) < 3; slot++ {
		if ru, _ := abc.Table.RunnerUp(slot); abc.Table.Owner(slot).Name == self.Name && ru.Name == c.Name &&
			ab.Table.Owner(slot).Name == self.Name {
			slots = append(slots, slot)
		}
	}
	require.NotEmpty(t, slots)
	view.Store(ab)
	s.ClusterChanged()
	for _, slot := range slots {
		st := s.ho.State(slot)
		require.NotNil(t, st, "slot %d", slot)
		require.Equal(t, b.Name, st.Peer().Name, "slot %d: imported from the only other member of the first view", slot)
	}
	view.Store(abc)
	s.ClusterChanged()
	for _, slot := range slots {
		st := s.ho.State(slot)
		require.NotNil(t, st, "slot %d", slot)
		assert.Equal(t, c.Name, st.Peer().Name, "slot %d: imported from its backup once the view has it", slot)
	}

	sender := cluster.NewPeers(cluster.PeersConfig{Name: c.Name, Secret: []byte("k"), Timeout: 2 * time.Second})
	t.Cleanup(sender.Close)
	spec := []byte(handoff.FormatSlots(slots))
	reps, err := sender.Forward(context.Background(), addr, [][][]byte{
		{[]byte("RL.PEER"), []byte("IMPORT"), []byte(c.Name), []byte("pull"), spec, persistence.AppendEntries([]byte{}, nil, time.Now().UnixNano())},
		{[]byte("RL.PEER"), []byte("DONE"), []byte(c.Name), spec},
	})
	require.NoError(t, err)
	assert.Equal(t, "+OK\r\n", string(reps[0]), "the copies are stored")
	assert.Equal(t, "+OK\r\n", string(reps[1]), "the backup's DONE ends the import")
	for _, slot := range slots {
		assert.Nil(t, s.ho.State(slot), "slot %d: served, importing nothing", slot)
	}
}

// TestJoinersGuessIsNoHolder: a joiner whose first view lacks a member
// guesses the owner its slots have without it, and imports them from that
// guess. When the next view gives some of them to the member it lacked,
// the guess is forgotten with the import: it is not knowledge of who
// holds them. Before, it stayed this node's holder record of the slots,
// and when that member died and the table gave them back to this node,
// its backup, it imported them from the guess instead of taking them over
// from its copies; the guess named the dead member, and the slots were
// lost while this node held their state (TestPausedOwnerAnswersNothingStale/30s
// in CI: 3114 slots CLUSTERDOWN for as long as p1 was paused).
func TestJoinersGuessIsNoHolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var view atomic.Pointer[cluster.View]
	a := cluster.Node{Name: "node0", Addr: "127.0.0.1:1"} // PULLs and RELEASED to a and b are refused
	b := cluster.Node{Name: "node1", Addr: "127.0.0.1:1"}
	self := cluster.Node{Name: "node2", Addr: ln.Addr().String()}
	table := func(epoch uint64, gone []cluster.Node, nodes ...cluster.Node) *cluster.View {
		tb, err := cluster.NewTable(epoch, nodes)
		require.NoError(t, err)
		v := &cluster.View{Self: self.Name, Table: tb}
		for _, n := range nodes {
			v.Members = append(v.Members, cluster.Member{Node: n})
		}
		for _, n := range gone {
			v.Gone = append(v.Gone, cluster.Member{Node: n, State: cluster.StateDead})
		}
		return v
	}
	view.Store(table(1, nil, self))
	peers := cluster.NewPeers(cluster.PeersConfig{Name: self.Name, Secret: []byte("k"), Timeout: 2 * time.Second})
	t.Cleanup(peers.Close)
	s := newTestServer(t, Config{Listener: ln, Cluster: &ClusterConfig{View: view.Load, Forwarder: peers, Joins: true, Secret: []byte("k")}})
	serveTest(t, s)
	s.ClusterChanged()

	ac, abc := table(2, nil, a, self), table(3, nil, a, b, self)
	var slots []int // this node's in {a, self}, b's in {a, b, self} with this node its backup
	for slot := 0; slot < cluster.Slots && len(slots) < 3; slot++ {
		if ru, _ := abc.Table.RunnerUp(slot); ac.Table.Owner(slot).Name == self.Name &&
			abc.Table.Owner(slot).Name == b.Name && ru.Name == self.Name {
			slots = append(slots, slot)
		}
	}
	require.NotEmpty(t, slots)
	view.Store(ac)
	s.ClusterChanged()
	for _, slot := range slots {
		st := s.ho.State(slot)
		require.NotNil(t, st, "slot %d", slot)
		require.Equal(t, a.Name, st.Peer().Name, "slot %d: imported from the first view's guess", slot)
	}
	view.Store(abc)
	s.ClusterChanged()
	for _, slot := range slots {
		require.Nil(t, s.ho.State(slot), "slot %d: b's now", slot)
		assert.Empty(t, s.ho.Probe().HolderOf(slot), "slot %d: the guess is forgotten with its import", slot)
	}
	view.Store(table(4, []cluster.Node{b}, a, self)) // b dies: its slots come back to this node, its backup
	s.ClusterChanged()
	for _, slot := range slots {
		assert.Nil(t, s.ho.State(slot), "slot %d: taken over from b, not imported from a", slot)
	}
}
