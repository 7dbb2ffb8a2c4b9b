package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCandidates: every slot's candidates are its owner, its runner-up,
// then every other node once, and two tables of the same nodes give the
// same order.
func TestCandidates(t *testing.T) {
	var nodes []Node
	for i := range 5 {
		nodes = append(nodes, Node{Name: fmt.Sprint("n", i)})
	}
	a, err := NewTable(1, nodes)
	require.NoError(t, err)
	b, err := NewTable(2, []Node{nodes[3], nodes[1], nodes[4], nodes[0], nodes[2]})
	require.NoError(t, err)
	var buf []Node
	for s := 0; s < Slots; s += 7 {
		cs := a.Candidates(s, buf[:0])
		require.Len(t, cs, len(nodes))
		ru, _ := a.RunnerUp(s)
		assert.Equal(t, a.Owner(s), cs[0])
		assert.Equal(t, ru, cs[1])
		seen := map[string]bool{}
		for _, n := range cs {
			seen[n.Name] = true
		}
		assert.Len(t, seen, len(nodes), "slot %d: a node twice", s)
		assert.Equal(t, cs, b.Candidates(s, nil), "slot %d: another order from the same nodes", s)
		buf = cs
	}
	one, err := NewTable(1, nodes[:1])
	require.NoError(t, err)
	assert.Equal(t, []Node{nodes[0]}, one.Candidates(5, nil))
}
