package cluster

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func nodes(n int, prefix string) []Node {
	ns := make([]Node, n)
	for i := range ns {
		ns[i] = Node{Name: fmt.Sprintf("%s%d", prefix, i), Addr: fmt.Sprintf("127.0.0.1:%d", 7000+i)}
	}
	return ns
}

func TestTableSameFromAnyOrder(t *testing.T) {
	ns := nodes(10, "node-")
	a, err := NewTable(1, ns)
	require.NoError(t, err)
	rev := make([]Node, len(ns))
	for i, n := range ns {
		rev[len(ns)-1-i] = n
	}
	b, err := NewTable(2, rev)
	require.NoError(t, err)
	assert.Empty(t, a.Moves(b), "the table depends only on the names")
	for s := range Slots {
		ru, ok := a.RunnerUp(s)
		require.True(t, ok)
		assert.NotEqual(t, a.Owner(s).Name, ru.Name, "slot %d's runner-up is its owner", s)
	}
}

func TestTableErrors(t *testing.T) {
	_, err := NewTable(1, nil)
	assert.ErrorIs(t, err, ErrNoNodes)
	_, err = NewTable(1, []Node{{Name: "a"}, {Name: "a"}})
	assert.Error(t, err)
}

func TestTableOneNode(t *testing.T) {
	tb, err := NewTable(1, []Node{{Name: "solo", Addr: "x"}})
	require.NoError(t, err)
	assert.Equal(t, []Range{{0, Slots - 1}}, tb.Ranges("solo"))
	_, ok := tb.RunnerUp(5)
	assert.False(t, ok)
}

// TestRunnerUpIsOwnerWithoutIt: the runner-up is who owns the slot once the owner leaves.
func TestRunnerUpIsOwnerWithoutIt(t *testing.T) {
	ns := nodes(5, "n")
	full, err := NewTable(1, ns)
	require.NoError(t, err)
	without, err := NewTable(2, ns[1:])
	require.NoError(t, err)
	for s := range Slots {
		if full.Owner(s).Name == "n0" {
			ru, _ := full.RunnerUp(s)
			assert.Equal(t, ru.Name, without.Owner(s).Name, "slot %d", s)
		}
	}
}

func TestRanges(t *testing.T) {
	tb, err := NewTable(1, nodes(3, "n"))
	require.NoError(t, err)
	total := 0
	for _, n := range tb.Nodes() {
		for _, r := range tb.Ranges(n.Name) {
			for s := r.From; s <= r.To; s++ {
				require.Equal(t, n.Name, tb.Owner(s).Name)
				total++
			}
		}
	}
	assert.Equal(t, Slots, total)
}

// TestSimulation is the scale check on paper, for 3, 10, 100 and 1000
// members: how evenly the slots spread, and how many a join or a leave
// moves, averaged over several joiners and leavers. Slots are dealt out
// like balls into bins, so the spread is binomial: ±10% of the ideal share
// holds up to a few tens of members (asserted at 3 and 10) and widens
// beyond (logged at 100 and 1000). 1000 is skipped with -short and under -race.
func TestSimulation(t *testing.T) {
	for _, n := range []int{3, 10, 100, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if n == 1000 && (testing.Short() || underRace) {
				t.Skip("a 1000-member simulation takes seconds under -race")
			}
			sim := simulate(t, n, 4)
			t.Logf("%d members: spread %+.1f%%..%+.1f%% of ideal; a join moved %.1f slots (%.2f×1/N), a leave %.1f (%.2f×1/N)",
				n, sim.minDev*100, sim.maxDev*100, sim.joinMoved, sim.joinRatio, sim.leaveMoved, sim.leaveRatio)
			if n <= 10 {
				assert.LessOrEqual(t, math.Max(-sim.minDev, sim.maxDev), 0.10, "balance")
			}
			assert.LessOrEqual(t, sim.joinRatio, 1.2, "slots moved by a join")
			assert.LessOrEqual(t, sim.leaveRatio, 1.2, "slots moved by a leave")
			assert.True(t, sim.leaveOnlyLeaver, "a leave moves only the leaver's slots")
		})
	}
}

type simResult struct {
	minDev, maxDev        float64
	joinMoved, leaveMoved float64 // slots, averaged
	joinRatio, leaveRatio float64 // to the ideal share of the table after the change
	leaveOnlyLeaver       bool
}

// simulate builds the table of n nodes, then tries runs joins (one new
// node each) and runs leaves (nodes spread through the list) against it.
func simulate(t *testing.T, n, runs int) simResult {
	ns := nodes(n, "node-")
	base, err := NewTable(1, ns)
	require.NoError(t, err)
	r := simResult{leaveOnlyLeaver: true}
	ideal := float64(Slots) / float64(n)
	r.minDev, r.maxDev = math.Inf(1), math.Inf(-1)
	for _, c := range base.Count() {
		d := float64(c)/ideal - 1
		r.minDev, r.maxDev = math.Min(r.minDev, d), math.Max(r.maxDev, d)
	}
	for i := range runs {
		joined, err := NewTable(2, append(slices.Clip(ns), Node{Name: fmt.Sprint("joiner-", i)}))
		require.NoError(t, err)
		r.joinMoved += float64(len(joined.Moves(base))) / float64(runs)
		at := (i*n/runs + n/(2*runs)) % n
		left, err := NewTable(3, slices.Delete(slices.Clone(ns), at, at+1))
		require.NoError(t, err)
		moves := left.Moves(base)
		r.leaveMoved += float64(len(moves)) / float64(runs)
		for _, m := range moves {
			r.leaveOnlyLeaver = r.leaveOnlyLeaver && m.From == ns[at].Name
		}
	}
	r.joinRatio = r.joinMoved / (float64(Slots) / float64(n+1))
	r.leaveRatio = r.leaveMoved / (float64(Slots) / float64(n))
	return r
}

// BenchmarkTableRebuild is the cost of one membership change.
func BenchmarkTableRebuild(b *testing.B) {
	for _, n := range []int{3, 10, 100, 1000} {
		ns := nodes(n, "node-")
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewTable(1, ns); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOwner(b *testing.B) {
	tb, err := NewTable(1, nodes(10, "n"))
	require.NoError(b, err)
	key := []byte("user:12345:api")
	b.ReportAllocs()
	for b.Loop() {
		_ = tb.Owner(Slot(key))
	}
}
