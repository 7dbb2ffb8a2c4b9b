package server

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRelayGuess replays a staggered cold start's table of a moment
// (TestColdStartStaggered): b's first table is {a, b}, and b imports its
// slots from its guess a, which has not met b yet and sends nothing; then
// b's table {a, b, c} moves some of them on to c, whose own first table
// is {a, b, c} and who imports them from b, its backup there. b never
// learned whether a held them, so it names a (livePrev) and sent c no
// DONE: c waited the 5 s import wait, asked b RL.PEER RELEASED, was told
// to ASK a, and a released them a second later. Now b asks a at once on
// c's behalf; a released them to c, so b answers for them as c's backup,
// and c serves them within a second.
func TestRelayGuess(t *testing.T) {
	secret := []byte("k")
	names := []string{"a", "b", "c"}
	nodes := make([]cluster.Node, 3)
	lns := make([]net.Listener, 3)
	for i := range lns {
		var err error
		lns[i], err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		nodes[i] = cluster.Node{Name: names[i], Addr: lns[i].Addr().String()}
	}
	table := func(self int, epoch uint64, members ...int) *cluster.View {
		var ns []cluster.Node
		for _, m := range members {
			ns = append(ns, nodes[m])
		}
		tb, err := cluster.NewTable(epoch, ns)
		require.NoError(t, err)
		v := &cluster.View{Self: names[self], Table: tb}
		for _, n := range ns {
			v.Members = append(v.Members, cluster.Member{Node: n})
		}
		return v
	}
	views := make([]atomic.Pointer[cluster.View], 3)
	srvs := make([]*Server, 3)
	for i := range srvs {
		views[i].Store(table(i, 1, i))
		peers := cluster.NewPeers(cluster.PeersConfig{Name: names[i], Secret: secret, Timeout: 2 * time.Second})
		t.Cleanup(peers.Close)
		store, copies := mustStore(t), mustStore(t)
		srvs[i] = newTestServer(t, Config{Listener: lns[i], Store: store, Cluster: &ClusterConfig{View: views[i].Load, Forwarder: peers,
			Joins: true, Secret: secret, Replicas: &ReplicaConfig{Feed: persistence.NewFeed(store), Copies: copies, Ship: peers, Interval: 10 * time.Millisecond}}})
		serveTest(t, srvs[i])
		srvs[i].ClusterChanged()
	}
	a, b, c := srvs[0], srvs[1], srvs[2]
	ab, abc := table(1, 2, 0, 1), table(1, 3, 0, 1, 2)
	var slots []int // b's in {a, b}, c's in {a, b, c} with b its backup
	for slot := range cluster.Slots {
		if ru, _ := abc.Table.RunnerUp(slot); ab.Table.Owner(slot).Name == "b" && abc.Table.Owner(slot).Name == "c" && ru.Name == "b" {
			slots = append(slots, slot)
		}
	}
	require.NotEmpty(t, slots)

	views[1].Store(ab) // b meets a; a has not met b: it answers b's PULL with nothing
	b.ClusterChanged()
	require.NotNil(t, b.ho.State(slots[0]), "b imports from its guess a")
	views[0].Store(table(0, 3, 0, 1, 2)) // a's first table with others has c
	a.ClusterChanged()
	views[2].Store(table(2, 3, 0, 1, 2)) // so has c's: it imports the slots from b
	c.ClusterChanged()
	require.NotNil(t, c.ho.State(slots[0]), "c imports from b")
	require.Equal(t, "b", c.ho.State(slots[0]).Peer().Name)
	start := time.Now()
	views[1].Store(abc) // b's next table moves the slots on to c
	b.ClusterChanged()
	require.Eventually(t, func() bool {
		for _, slot := range slots {
			if c.ho.State(slot) != nil {
				return false
			}
		}
		return true
	}, 4*time.Second, 10*time.Millisecond, "c serves the slots before its 5 s import wait: b asked a on its behalf")
	t.Logf("c served %d slots %v after b's table moved them", len(slots), time.Since(start).Round(time.Millisecond))
	assert.Less(t, time.Since(start), 4*time.Second)
}
