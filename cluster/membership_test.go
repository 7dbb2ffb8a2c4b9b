package cluster

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testNode is a Membership with a record of the views it was given.
type testNode struct {
	*Membership
	mu    sync.Mutex
	views []View
	state *lwwState
}

func (n *testNode) gone() []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	var g []Member
	for _, v := range n.views {
		g = append(g, v.Gone...)
	}
	return g
}

func startNode(t *testing.T, name string, seeds []string, keys ...[]byte) *testNode {
	t.Helper()
	return startNodeAt(t, name, "127.0.0.1:0", seeds, keys...)
}

func startNodeAt(t *testing.T, name, bind string, seeds []string, keys ...[]byte) *testNode {
	t.Helper()
	return startNodeWith(t, Config{NodeName: name, BindAddr: bind, Seeds: seeds, Keys: keys})
}

// startNodeWith starts a node of cfg, with the tests' defaults filled in.
func startNodeWith(t *testing.T, cfg Config) *testNode {
	t.Helper()
	n := &testNode{state: &lwwState{}}
	cfg.RESPAddr, cfg.Timing, cfg.Logger, cfg.State = "127.0.0.1:1"+cfg.NodeName, TestTiming(), slog.New(slog.DiscardHandler), n.state
	cfg.OnChange = func(v View) {
		n.mu.Lock()
		n.views = append(n.views, v)
		n.mu.Unlock()
	}
	m, err := New(cfg)
	require.NoError(t, err)
	n.Membership = m
	t.Cleanup(func() { m.Kill() })
	return n
}

// startCluster starts n nodes joined through the first, and waits until all see all.
func startCluster(t *testing.T, n int, keys ...[]byte) []*testNode {
	t.Helper()
	first := startNode(t, "n0", nil, keys...)
	ns := []*testNode{first}
	for i := 1; i < n; i++ {
		ns = append(ns, startNode(t, fmt.Sprint("n", i), []string{first.GossipAddr()}, keys...))
	}
	waitMembers(t, ns, n)
	return ns
}

func waitMembers(t *testing.T, ns []*testNode, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range ns {
			if len(n.View().Table.Nodes()) != want {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every node sees %d owners", want)
}

// TestRollingUpgradeKeepsPerSlotTable: while a member of a build before
// chunks is in the cluster (it advertises delegate protocol 0 at most),
// every member deals the slots out per slot, as that member does, so no two
// name different owners; once it has gone, they switch to chunks.
func TestRollingUpgradeKeepsPerSlotTable(t *testing.T) {
	ns := startCluster(t, 2)
	require.False(t, ns[0].View().Table.PerSlot())
	old := startNodeWith(t, Config{NodeName: "old", BindAddr: "127.0.0.1:0", Seeds: []string{ns[0].GossipAddr()}, perSlotOnly: true})
	all := append(slices.Clip(ns), old)
	waitMembers(t, all, 3)
	want := old.View().Table
	require.True(t, want.PerSlot(), "the old member's own table")
	for _, n := range ns {
		require.Eventually(t, func() bool { return len(n.View().Table.Moves(want)) == 0 }, 5*time.Second, 10*time.Millisecond,
			"%s deals slots out as the old member does", n.cfg.NodeName)
		assert.True(t, n.View().Table.PerSlot())
	}
	require.NoError(t, old.Leaving(time.Second))
	require.NoError(t, old.Close(time.Second))
	waitMembers(t, ns, 2)
	assert.False(t, ns[0].View().Table.PerSlot(), "chunks again once every member computes them")
}

func TestMembersAgreeOnTable(t *testing.T) {
	ns := startCluster(t, 3)
	want := ns[0].View().Table
	assert.False(t, want.PerSlot(), "members of this build deal chunks out")
	for _, n := range ns[1:] {
		assert.Empty(t, n.View().Table.Moves(want), "%s computes another table", n.cfg.NodeName)
	}
	for _, m := range ns[0].View().Members {
		assert.Equal(t, "127.0.0.1:1"+m.Name, m.Addr, "node meta carries the RESP address")
	}
}

func TestDeathIsNotALeave(t *testing.T) {
	ns := startCluster(t, 3)
	ns[2].Kill()
	waitMembers(t, ns[:2], 2)
	require.Eventually(t, func() bool { return len(ns[0].gone()) == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, StateDead, ns[0].gone()[0].State)
}

func TestGracefulLeave(t *testing.T) {
	ns := startCluster(t, 3)
	require.NoError(t, ns[2].Leaving(time.Second))
	self, _ := ns[2].View().Member("n2")
	assert.Equal(t, StateLeaving, self.State, "Leaving has rebuilt the leaver's own view")
	for _, n := range ns {
		require.Eventually(t, func() bool {
			self, ok := n.View().Member("n2")
			return ok && self.State == StateLeaving
		}, 5*time.Second, 5*time.Millisecond, "a leaving member is still a member until it goes")
		assert.False(t, n.View().Table.Has("n2"), "a leaving member owns nothing")
	}
	require.NoError(t, ns[2].Close(time.Second))
	require.Eventually(t, func() bool { return len(ns[0].gone()) == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, StateLeft, ns[0].gone()[0].State)
}

func TestWrongKeyCannotJoin(t *testing.T) {
	key := []byte("0123456789abcdef")
	ns := startCluster(t, 2, key)
	intruder := startNode(t, "intruder", []string{ns[0].GossipAddr()}, []byte("fedcba9876543210"))
	plain := startNode(t, "plain", []string{ns[0].GossipAddr()})
	_, err := intruder.ml.Join([]string{ns[0].GossipAddr()})
	assert.Error(t, err, "a wrong key is refused")
	_, err = plain.ml.Join([]string{ns[0].GossipAddr()})
	assert.Error(t, err, "no key is refused")
	for _, n := range ns {
		assert.Len(t, n.View().Table.Nodes(), 2)
	}
	assert.Len(t, intruder.View().Table.Nodes(), 1)
}

// TestRejoinsMissingSeed: a node whose seed was not there at its start
// joins it once it appears, with no help.
func TestRejoinsMissingSeed(t *testing.T) {
	addr := "127.0.0.1:" + testport.Stable(t) // b dials it before a listens there
	b := startNode(t, "b", []string{addr})
	assert.Len(t, b.View().Table.Nodes(), 1)
	a := startNodeAt(t, "a", addr, nil)
	waitMembers(t, []*testNode{a, b}, 2)
}

func TestStateReachesEveryNode(t *testing.T) {
	ns := startCluster(t, 3)
	ns[0].state.set("v1")
	ns[0].Broadcast([]byte("v1"))
	for _, n := range ns {
		require.Eventually(t, func() bool { return n.state.get() == "v1" }, 5*time.Second, 10*time.Millisecond)
	}
	big := make([]byte, 5000) // too big for gossip: goes over TCP
	for i := range big {
		big[i] = 'x'
	}
	ns[1].Broadcast(big)
	require.Eventually(t, func() bool { return len(ns[2].state.get()) == 5000 }, 5*time.Second, 10*time.Millisecond)
	late := startNode(t, "late", []string{ns[0].GossipAddr()})
	require.Eventually(t, func() bool { return len(late.state.get()) == 5000 }, 5*time.Second, 10*time.Millisecond,
		"push/pull on join carries the state")
}

// lwwState keeps the longest value it was given: a stand-in for a
// last-writer-wins merge.
type lwwState struct {
	mu sync.Mutex
	v  string
}

func (s *lwwState) set(v string) { s.mu.Lock(); s.v = v; s.mu.Unlock() }
func (s *lwwState) get() string  { s.mu.Lock(); defer s.mu.Unlock(); return s.v }
func (s *lwwState) LocalState() []byte {
	return []byte(s.get())
}
func (s *lwwState) Merge(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(b) >= len(s.v) {
		s.v = string(b)
	}
}

// TestStaleDepartureOfANewMemberIsIgnored: a report that a member which
// just (re)joined is dead, which it refutes (stale gossip about the
// process it replaced), moves nothing.
func TestStaleDepartureOfANewMemberIsIgnored(t *testing.T) {
	ns := startCluster(t, 2)
	n1 := ownNode(ns[1])
	justJoined(ns[0], "n1")
	n1.State = memberlist.StateDead
	ns[0].departed(n1)
	require.Eventually(t, func() bool { return ns[0].refuted.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
		"the departure is checked again, and n1 is alive")
	assert.Empty(t, ns[0].gone(), "no view lost n1")
	assert.True(t, ns[0].View().Table.Has("n1"))
}

// TestDepartureOfANewMemberStillCounts: a member that really dies right
// after it joined is gone, whatever report of it was held back: failure
// detection reports its death in its own time.
func TestDepartureOfANewMemberStillCounts(t *testing.T) {
	ns := startCluster(t, 3) // two survivors: a majority confirms the death
	n1 := ownNode(ns[1])
	justJoined(ns[0], "n1")
	ns[1].Kill()
	n1.State = memberlist.StateDead
	ns[0].departed(n1)
	waitMembers(t, []*testNode{ns[0], ns[2]}, 2)
	// The view is stored before OnChange records it: wait for the record.
	require.Eventually(t, func() bool { return len(ns[0].gone()) > 0 }, 5*time.Second, 10*time.Millisecond,
		"a view with n1 gone reached OnChange")
	assert.Equal(t, StateDead, ns[0].gone()[0].State)
}

// ownNode returns a copy of n's memberlist record of itself: the record
// another member holds of it, which a loaded host's failure detector may
// have dropped for a moment (a false suspicion, refuted a round later).
func ownNode(n *testNode) *memberlist.Node {
	c := *n.ml.LocalNode()
	return &c
}

// justJoined makes n count name as (re)joined now, as the report these
// tests send assumes: startCluster on a loaded host can take longer than
// flapGrace after the member joined, and the report would then not be held
// back at all.
func justJoined(n *testNode, name string) {
	n.Membership.mu.Lock()
	n.joined[name] = time.Now()
	n.Membership.mu.Unlock()
}

// TestMembershipDeathNeedsMajority: a member only one node declares dead
// (a minority's failure detector, as on the minority side of a partition,
// or a slow probe) keeps its slots in that node's table: a table dropping
// it would deal its slots, and by the load bound others', to nodes that
// may serve them while the member, or their owner in the others' tables,
// still does (simulation seed 1778). Once a majority of the known members
// fence it, the table drops it.
func TestMembershipDeathNeedsMajority(t *testing.T) {
	ns := startCluster(t, 3)
	for _, n := range ns {
		require.Eventually(t, n.Lease().Valid, 5*time.Second, 10*time.Millisecond)
	}
	victim := ns[2].ml.LocalNode()
	declare := func(n *testNode) {
		n.Membership.mu.Lock()
		mn, ok := n.nodes[victim.Name]
		n.Membership.mu.Unlock()
		require.True(t, ok)
		n.departedNow(&mn)
		n.sync()
	}
	declare(ns[0])
	assert.True(t, ns[0].View().Table.Has(victim.Name), "one node of three declared it dead: its slots stay its own")
	assert.Equal(t, 2, len(ns[0].View().Members), "while it is out of the members")
	// A few rounds of answers from n1, which counts it alive, confirm nothing.
	deadline := ns[0].Lease().Deadline()
	require.Eventually(t, func() bool { return ns[0].Lease().Deadline() > deadline+int64(400*time.Millisecond) }, 5*time.Second, 10*time.Millisecond)
	assert.True(t, ns[0].View().Table.Has(victim.Name))
	assert.False(t, ns[0].Lease().Confirmed(victim.Name, []string{"n0", "n1", "n2"}))

	declare(ns[1])
	require.Eventually(t, func() bool { return !ns[0].View().Table.Has(victim.Name) && !ns[1].View().Table.Has(victim.Name) },
		5*time.Second, 10*time.Millisecond, "two of three fence it: the death is confirmed")
}
