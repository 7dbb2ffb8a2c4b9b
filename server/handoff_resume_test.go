package server

import (
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.True(t, h.died["b"].majority(), "a kept 2 of 3 members")

	// b, cut off, saw a die, then c: it ended alone.
	var hb handoff
	ba := viewOf(t, 2, []string{"b", "c"}, "a")
	hb.noteDeaths(abc, ba)
	hb.noteDeaths(ba, viewOf(t, 3, []string{"b"}, "c"))
	assert.False(t, hb.died["a"].majority(), "b was left with 1 of 3")
	assert.False(t, hb.died["c"].majority(), "b was left with 1 of 2")

	// two nodes: neither side is a majority.
	var h2 handoff
	ab := viewOf(t, 1, []string{"a", "b"})
	h2.noteDeaths(ab, viewOf(t, 2, []string{"a"}, "b"))
	assert.False(t, h2.died["b"].majority())

	// a leave is no death.
	h.noteDeaths(nil, &cluster.View{Self: "a", Table: abc.Table, Gone: []cluster.Member{{Node: cluster.Node{Name: "b"}, State: cluster.StateLeft}}})
	_, ok := h.died["b"]
	assert.False(t, ok)
}
