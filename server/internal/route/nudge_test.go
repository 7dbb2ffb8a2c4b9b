package route

import (
	"math/rand/v2"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func nudgeTable(t *testing.T, epoch uint64, names ...string) *cluster.Table {
	t.Helper()
	var ns []cluster.Node
	for _, n := range names {
		ns = append(ns, cluster.Node{Name: n, Addr: n + ":6379"})
	}
	tb, err := cluster.NewTable(epoch, ns)
	require.NoError(t, err)
	return tb
}

func nudgeMembers(names ...string) []cluster.Member {
	var ms []cluster.Member
	for _, n := range names {
		ms = append(ms, cluster.Member{Node: cluster.Node{Name: n, Addr: n + ":6379"}})
	}
	return ms
}

// routeFor is how routeOf routes slot on a node called self under tb.
func routeFor(tb *cluster.Table, self string, slot int) route {
	if o := tb.Owner(slot); o.Name != self {
		return route{slot: slot, owner: o, level: hopForward}
	}
	return route{local: true, slot: slot}
}

// TestRoutingJudgesConnections: a connection counts as routing by slot
// only once it sent keys of 16 slot classes here and almost nothing to
// forward; a plain client's random keys never make it so.
func TestRoutingJudgesConnections(t *testing.T) {
	tb := nudgeTable(t, 1, "a", "b", "c")
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 1000; n++ { // plain clients: every key, whoever owns it
		var rt routing
		for range 1 + n%200 {
			rt.note(tb, routeFor(tb, "a", rng.IntN(16384)))
		}
		require.False(t, rt.routed(), "a plain client of %d keys taken for routed", 1+n%200)
	}
	var rt routing // a cluster-aware client: only a's keys
	sent := 0
	for !rt.routed() {
		s := rng.IntN(16384)
		if tb.Owner(s).Name == "a" {
			rt.note(tb, routeFor(tb, "a", s))
			sent++
		}
		require.Less(t, sent, 200, "a routed client not taken for one")
	}
	t.Logf("routed after %d keys", sent)
	for range sent / routedRatio { // a few stale keys forwarded during a change
		rt.note(tb, routeFor(tb, "a", ownedBy(tb, "b")))
	}
	assert.True(t, rt.routed(), "a few forwards")

	var alone routing // one node owns every slot: nothing to learn
	one := nudgeTable(t, 1, "a")
	for s := range 1000 {
		alone.note(one, routeFor(one, "a", s))
	}
	assert.False(t, alone.routed())
}

func ownedBy(tb *cluster.Table, name string) int {
	for s := range cluster.Slots {
		if tb.Owner(s).Name == name {
			return s
		}
	}
	return -1
}

// TestNudgeWaitsForTheConfirmation: a routed connection's nudge waits
// while the table still names a member declared dead and not confirmed
// (CLUSTER SLOTS would name it, and node-redis's reload waits on a dead
// node for good), and comes with the table that drops it.
func TestNudgeWaitsForTheConfirmation(t *testing.T) {
	members := nudgeMembers
	all := &cluster.View{Self: "a", Table: nudgeTable(t, 1, "a", "b", "c"), Members: members("a", "b", "c")}
	var ro routing
	own := ownedBy(all.Table, "a")
	assert.False(t, ro.changedTo(all, own), "a connection's first table")
	for s := 0; !ro.routed(); s++ {
		if all.Table.Owner(s).Name == "a" {
			ro.note(all.Table, routeFor(all.Table, "a", s))
		}
	}
	pending := &cluster.View{Self: "a", Table: nudgeTable(t, 2, "a", "b", "c"), Members: members("a", "b")}
	assert.False(t, ro.changedTo(pending, own), "c declared dead, not confirmed: the table still names it")
	assert.False(t, ro.changedTo(pending, own))
	confirmed := &cluster.View{Self: "a", Table: nudgeTable(t, 3, "a", "b"), Members: members("a", "b")}
	assert.True(t, ro.changedTo(confirmed, own), "the table without c: nudged")
	assert.False(t, ro.changedTo(confirmed, own), "once")
	assert.True(t, ro.changedTo(&cluster.View{Self: "a", Table: nudgeTable(t, 4, "a", "b"), Members: members("a", "b")}, own), "and again at the next change")
}

// TestNoNudgeOnAGainedSlot: a routed connection whose first keyed command
// after a change is on a slot the change gave this node gets no nudge (it
// has the new map), and no later one at that table.
func TestNoNudgeOnAGainedSlot(t *testing.T) {
	before := &cluster.View{Self: "a", Table: nudgeTable(t, 1, "a", "b", "c"), Members: nudgeMembers("a", "b", "c")}
	after := &cluster.View{Self: "a", Table: nudgeTable(t, 2, "a", "b"), Members: nudgeMembers("a", "b")}
	gained, kept := -1, -1
	for s := range cluster.Slots {
		switch {
		case after.Table.Owner(s).Name != "a":
		case before.Table.Owner(s).Name == "c":
			gained = s
		case before.Table.Owner(s).Name == "a":
			kept = s
		}
	}
	require.True(t, gained >= 0 && kept >= 0, "a slot of c's that a gets, and one a keeps")
	for _, tc := range []struct {
		name string
		slot int
		want bool
	}{{"a slot a kept", kept, true}, {"a slot a gained", gained, false}} {
		var ro routing
		for s := 0; !ro.routed(); s++ {
			if before.Table.Owner(s).Name == "a" {
				ro.note(before.Table, routeFor(before.Table, "a", s))
			}
		}
		require.False(t, ro.changedTo(before, tc.slot))
		assert.Equal(t, tc.want, ro.changedTo(after, tc.slot), tc.name)
		assert.False(t, ro.changedTo(after, kept), "%s: then none at that table", tc.name)
	}
}

// TestHostNudgesOncePerTable: of the libraries nudged per host, one
// connection from each client host gets the nudge at each table epoch; a
// connection still on an older table gets none.
func TestHostNudgesOncePerTable(t *testing.T) {
	var h hostNudges
	assert.True(t, h.first("10.0.0.1", 5), "the host's first at epoch 5")
	assert.False(t, h.first("10.0.0.1", 5), "its second")
	assert.True(t, h.first("10.0.0.2", 5), "another host")
	assert.False(t, h.first("10.0.0.2", 4), "an older table")
	assert.True(t, h.first("10.0.0.1", 6), "the next table")
	assert.False(t, h.first("10.0.0.1", 6))
	assert.Len(t, h.hosts, 1, "only the latest epoch's hosts are kept")
	assert.Equal(t, "::1", hostOf("[::1]:6379"))
	assert.Equal(t, "10.0.0.1", hostOf("10.0.0.1:50000"))
}
