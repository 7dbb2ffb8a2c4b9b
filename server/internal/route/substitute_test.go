package route

import (
	"slices"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
)

func sideView(tb *cluster.Table, self string, side ...string) *cluster.View {
	v := &cluster.View{Self: self, Table: tb}
	for _, n := range side {
		m, _ := tb.Node(n)
		v.Members = append(v.Members, cluster.Member{Node: m})
	}
	return v
}

// TestSubstituteOnePerSide: through a partition, the nodes of one side
// pick the same substitute for every slot, a node of their own side, and
// the owner itself where it is on their side; so each side decides each
// key at one node. Whether a node sees the other side declared dead or
// only failed to reach it (suspect) makes no difference.
func TestSubstituteOnePerSide(t *testing.T) {
	splits := []struct {
		name  string
		nodes []string
		sides [][]string
	}{
		{"2/2", []string{"a", "b", "c", "d"}, [][]string{{"a", "b"}, {"c", "d"}}},
		{"1/3", []string{"a", "b", "c"}, [][]string{{"a", "b"}, {"c"}}},
		{"3/2", []string{"a", "b", "c", "d", "e"}, [][]string{{"a", "c", "e"}, {"b", "d"}}},
	}
	none := func(string) bool { return false }
	for _, sp := range splits {
		tb := nudgeTable(t, 1, sp.nodes...)
		for _, side := range sp.sides {
			other := func(name string) bool { return !slices.Contains(side, name) }
			for slot := range cluster.Slots {
				want := pickSubstitute(sideView(tb, side[0], side...), slot, none).Name
				if !assert.Contains(t, side, want, "%s slot %d: a substitute across the cut", sp.name, slot) {
					return
				}
				if owner := tb.Owner(slot).Name; slices.Contains(side, owner) {
					assert.Equal(t, owner, want, "%s slot %d: the owner is on this side", sp.name, slot)
				}
				for _, self := range side {
					dead := pickSubstitute(sideView(tb, self, side...), slot, none).Name
					cut := pickSubstitute(sideView(tb, self, sp.nodes...), slot, other).Name
					if !assert.Equal(t, want, dead, "%s slot %d at %s, the others declared dead", sp.name, slot, self) ||
						!assert.Equal(t, want, cut, "%s slot %d at %s, the others not reached", sp.name, slot, self) {
						return
					}
				}
			}
		}
	}
}

// TestSubstituteSkipsAFailedOwner: an owner just failed to answer is
// passed over, as the runner-up would take the slot over.
func TestSubstituteSkipsAFailedOwner(t *testing.T) {
	tb := nudgeTable(t, 1, "a", "b", "c")
	slot := ownedBy(tb, "c")
	ru, _ := tb.RunnerUp(slot)
	v := sideView(tb, "a", "a", "b", "c")
	assert.Equal(t, "c", pickSubstitute(v, slot, func(string) bool { return false }).Name)
	assert.Equal(t, ru.Name, pickSubstitute(v, slot, func(n string) bool { return n == "c" }).Name)
	assert.Equal(t, "a", pickSubstitute(v, slot, func(n string) bool { return n != "a" }).Name, "none reached: this node")
}
