package handoff

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// viewOf is a view of the named members, reporting gone as dead.
func viewOf(t *testing.T, epoch uint64, members []string, gone ...string) *cluster.View {
	t.Helper()
	var nodes []cluster.Node
	for _, m := range members {
		nodes = append(nodes, cluster.Node{Name: m})
	}
	tb, err := cluster.NewTable(epoch, nodes)
	require.NoError(t, err)
	v := &cluster.View{Self: members[0], Table: tb}
	for _, g := range gone {
		v.Gone = append(v.Gone, cluster.Member{Node: cluster.Node{Name: g}, State: cluster.StateDead})
	}
	return v
}

// TestReplaceOnlyFromTheMajority: a node hands a member's slots back in
// replace mode only if its views kept a majority while the member was away.
func TestReplaceOnlyFromTheMajority(t *testing.T) {
	// a and c saw b die: two of three stayed.
	var h handoff
	abc := viewOf(t, 1, []string{"a", "b", "c"})
	h.noteDeaths(nil, abc)
	h.noteDeaths(abc, viewOf(t, 2, []string{"a", "c"}, "b"))
	assert.True(t, h.died["b"].replaces(nil), "a kept 2 of 3 members")

	// b, cut off, saw a die, then c: it ended alone.
	var hb handoff
	ba := viewOf(t, 2, []string{"b", "c"}, "a")
	hb.noteDeaths(abc, ba)
	hb.noteDeaths(ba, viewOf(t, 3, []string{"b"}, "c"))
	assert.False(t, hb.died["a"].replaces(nil), "b was left with 1 of 3")
	assert.False(t, hb.died["c"].replaces(nil), "b was left with 1 of 2")

	// two nodes: neither side is a majority.
	var h2 handoff
	ab := viewOf(t, 1, []string{"a", "b"})
	h2.noteDeaths(ab, viewOf(t, 2, []string{"a"}, "b"))
	assert.False(t, h2.died["b"].replaces(nil))

	// Five nodes split 3/2: e, on the minority side, sees a, b and c die
	// one after another. Its views kept 2 of the 5 it had: no majority,
	// however the deaths were spread over views (each used to be counted
	// against the view just before it, which had already lost the first).
	var he handoff
	all := viewOf(t, 1, []string{"e", "a", "b", "c", "d"})
	v2 := viewOf(t, 2, []string{"e", "b", "c", "d"}, "a")
	v3 := viewOf(t, 3, []string{"e", "c", "d"}, "b")
	v4 := viewOf(t, 4, []string{"e", "d"}, "c")
	he.noteDeaths(all, v2)
	he.noteDeaths(v2, v3)
	he.noteDeaths(v3, v4)
	for _, m := range []string{"a", "b", "c"} {
		assert.False(t, he.died[m].replaces(nil), "e was left with 2 of 5; %s's slots go back in reset", m)
	}

	// a leave is no death.
	h.noteDeaths(nil, &cluster.View{Self: "a", Table: abc.Table, Gone: []cluster.Member{{Node: cluster.Node{Name: "b"}, State: cluster.StateLeft}}})
	_, ok := h.died["b"]
	assert.False(t, ok)
}
