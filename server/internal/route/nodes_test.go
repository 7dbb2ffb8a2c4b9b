package route

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigEpochsNeverGoBack walks several nodes' known member sets
// through random joins, returns at new addresses, leaves, forgets and
// merges in any order: on every node, after every step, no member's
// config epoch is lower than before and no two are equal; once the sets
// have been exchanged, every node computes the same epochs. No clock is
// read, so a clock step cannot move them; a restart with a data dir
// (NewKnown of the saved set) computes the same ones.
func TestConfigEpochsNeverGoBack(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		sets := make([]*cluster.Known, 4)
		last := make([]map[string]uint64, len(sets))
		for i := range sets {
			sets[i] = cluster.NewKnown(nil)
			last[i] = map[string]uint64{}
		}
		check := func(i int, step string) {
			t.Helper()
			ep := configEpochs(sets[i].All())
			seen := map[uint64]string{}
			for name, e := range ep {
				require.GreaterOrEqual(t, e, last[i][name], "seed %d, node %d, %s: %s's epoch went back", seed, i, step, name)
				other, dup := seen[e]
				require.False(t, dup, "seed %d, node %d, %s: %s and %s share epoch %d", seed, i, step, name, other, e)
				seen[e] = name
			}
			last[i] = ep
		}
		for step := range 200 {
			i, name := rng.IntN(len(sets)), fmt.Sprint("n", rng.IntN(8))
			var what string
			switch rng.IntN(4) {
			case 0:
				what = "add " + name
				sets[i].Add(name, fmt.Sprintf("10.0.0.%d:7946", rng.IntN(3)))
			case 1:
				what = "remove " + name
				sets[i].Remove(name)
			default:
				j := rng.IntN(len(sets))
				what = fmt.Sprint("merge from ", j)
				sets[i].Merge(sets[j].All())
			}
			check(i, fmt.Sprint("step ", step, " (", what, ")"))
		}
		for range 2 {
			for i := range sets {
				for j := range sets {
					sets[i].Merge(sets[j].All())
				}
			}
		}
		for i := range sets {
			check(i, "the exchange")
			assert.Equal(t, last[0], last[i], "seed %d: node %d's epochs after the exchange", seed, i)
		}
		assert.Equal(t, last[0], configEpochs(cluster.NewKnown(sets[0].All()).All()), "seed %d: after a restart", seed)
	}
}

// TestConfigEpochsRestartKeeps: a member's restart at its address changes
// no epoch, nor does a join; a return at a new address raises the
// member's own.
func TestConfigEpochsRestartKeeps(t *testing.T) {
	k := cluster.NewKnown(nil)
	k.Add("a", "10.0.0.1:7946")
	k.Add("b", "10.0.0.2:7946")
	before := configEpochs(k.All())
	assert.False(t, k.Add("b", "10.0.0.2:7946"), "a restart at the same address")
	assert.Equal(t, before, configEpochs(k.All()))
	k.Add("c", "10.0.0.3:7946")
	after := configEpochs(k.All())
	assert.Equal(t, before["a"], after["a"])
	assert.Equal(t, before["b"], after["b"])
	assert.Greater(t, after["c"], after["b"])
	k.Add("b", "10.0.0.9:7946")
	assert.Greater(t, configEpochs(k.All())["b"], after["b"], "b came back at a new address")
}

// TestClusterNodesFlags: a member this node declared dead while no
// majority confirmed it keeps its slots as "fail?"; a known member that is
// neither a member nor an owner here is "fail" (at its last address, or
// noaddr); both are disconnected, and one that left is not listed. CLUSTER
// INFO counts the suspected owner's slots as pfail, the rest as ok.
func TestClusterNodesFlags(t *testing.T) {
	a := cluster.Node{Name: "a", Addr: "10.0.0.1:6379"}
	b := cluster.Node{Name: "b", Addr: "10.0.0.2:6379"}
	c := cluster.Node{Name: "c", Addr: "10.0.0.3:6379"}
	d := cluster.Node{Name: "d", Addr: "10.0.0.4:6379"}
	all, err := cluster.NewTable(1, []cluster.Node{a, b, c, d})
	require.NoError(t, err)
	three, err := cluster.NewTable(2, []cluster.Node{a, b, c})
	require.NoError(t, err)
	known := []cluster.KnownMember{{Name: "a", Gossip: "10.0.0.1:7946", Version: 1}, {Name: "b", Gossip: "10.0.0.2:7946", Version: 1},
		{Name: "c", Gossip: "10.0.0.3:7946", Version: 1}, {Name: "d", Gossip: "10.0.0.4:7946", Version: 1},
		{Name: "e", Gossip: "10.0.0.5:7946", Version: 2, Gone: true}, {Name: "f", Gossip: "10.0.0.6:7946", Version: 1}}
	rt := &Router{cfg: ClusterConfig{KnownSet: func() []cluster.KnownMember { return known }}}
	members := []cluster.Member{{Node: a, Gossip: "10.0.0.1:7946"}, {Node: b, Gossip: "10.0.0.2:7946"}}
	rt.topologyOf(&cluster.View{Self: "a", Table: all, Members: append(members, cluster.Member{Node: d})}) // d's address is seen once
	v := &cluster.View{Self: "a", Table: three, Members: members}

	lines := map[string][]string{}
	for line := range strings.Lines(string(rt.nodesOf(v).text)) {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 8, line)
		lines[f[0]] = f
	}
	require.Len(t, lines, 5, "a, b, c, d and f; e left")
	for _, w := range []struct{ name, addr, flags, link string }{
		{"a", "10.0.0.1:6379@7946", "myself,master", "connected"},
		{"b", "10.0.0.2:6379@7946", "master", "connected"},
		{"c", "10.0.0.3:6379@7946", "master,fail?", "disconnected"},
		{"d", "10.0.0.4:6379@7946", "master,fail", "disconnected"},
		{"f", ":0@7946", "master,fail,noaddr", "disconnected"},
	} {
		l := lines[NodeID(w.name)]
		require.NotNil(t, l, w.name)
		assert.Equal(t, []string{w.addr, w.flags, w.link}, []string{l[1], l[2], l[7]}, w.name)
	}
	assert.Greater(t, len(lines[NodeID("c")]), 8, "c keeps its slots until a majority confirms its death")
	assert.Len(t, lines[NodeID("d")], 8, "d owns nothing")

	ok, pfail, fail := rt.slotStates(v)
	counts := three.Count()
	assert.Equal(t, []int{counts[0] + counts[1], counts[2], 0}, []int{ok, pfail, fail}, "ok, pfail, fail")
	ok, pfail, fail = rt.slotStates(&cluster.View{Self: "a", Table: three, Members: members, Waiting: true})
	assert.Equal(t, []int{0, 0, cluster.Slots}, []int{ok, pfail, fail}, "waiting to meet a member: serves none")
}
