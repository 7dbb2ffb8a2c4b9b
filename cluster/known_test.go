package cluster

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func names(ms []KnownMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestKnownDeathDoesNotShrink(t *testing.T) {
	k := NewKnown(nil)
	assert.True(t, k.Add("a", "10.0.0.1:7946"))
	assert.True(t, k.Add("b", "10.0.0.2:7946"))
	assert.True(t, k.Add("c", "10.0.0.3:7946"))
	assert.False(t, k.Add("c", "10.0.0.3:7946"), "seen again: no change")
	assert.Equal(t, 3, k.Len())
	assert.Equal(t, 2, Quorum(k.Len()))
	// Only a graceful leave or a forget removes a member.
	assert.True(t, k.Remove("c"))
	assert.False(t, k.Remove("c"))
	assert.Equal(t, []string{"a", "b"}, names(k.Members()))
	assert.Equal(t, []string{"a", "b", "c"}, names(k.All()), "c stays as a tombstone")
	assert.False(t, k.Has("c"))
	// An older copy of the set does not bring c back; seeing it alive does.
	assert.False(t, k.Merge([]KnownMember{{Name: "c", Gossip: "10.0.0.3:7946", Version: 1}}))
	assert.False(t, k.Has("c"))
	assert.True(t, k.Add("c", "10.0.0.3:7946"))
	assert.True(t, k.Has("c"))
}

func TestKnownNewAddress(t *testing.T) {
	k := NewKnown(nil)
	k.Add("a", "10.0.0.1:7946")
	assert.True(t, k.Add("a", "10.0.0.9:7946"))
	assert.Equal(t, "10.0.0.9:7946", k.Members()[0].Gossip)
	assert.False(t, k.Add("a", ""), "an unknown address keeps the last one")
}

func TestKnownOnChange(t *testing.T) {
	k := NewKnown(nil)
	var got [][]KnownMember
	k.OnChange(func(all []KnownMember) { got = append(got, all) })
	k.Add("a", "x:1")
	k.Add("a", "x:1")
	k.Remove("a")
	require.Len(t, got, 2)
	assert.True(t, got[1][0].Gone)
}

// Every node converges on the same set whatever order merges come in.
func TestKnownMergeConverges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		nodes := []*Known{NewKnown(nil), NewKnown(nil), NewKnown(nil)}
		for range 30 {
			k := nodes[r.IntN(3)]
			name := string(rune('a' + r.IntN(5)))
			switch r.IntN(3) {
			case 0:
				k.Add(name, "h:"+string(rune('0'+r.IntN(3))))
			case 1:
				k.Remove(name)
			default:
				k.Merge(nodes[r.IntN(3)].All())
			}
		}
		for range 2 { // everyone hears everyone, in some order
			for _, i := range r.Perm(3) {
				for _, j := range r.Perm(3) {
					nodes[i].Merge(nodes[j].All())
				}
			}
		}
		assert.Equal(t, nodes[0].All(), nodes[1].All(), "round %d", round)
		assert.Equal(t, nodes[0].All(), nodes[2].All(), "round %d", round)
	}
}

func TestKnownEncoding(t *testing.T) {
	in := []KnownMember{
		{Name: "a", Gossip: "10.0.0.1:7946", Version: 3},
		{Name: "b", Version: 1},
		{Name: "c", Gossip: "[::1]:7946", Version: 7, Gone: true},
	}
	b := AppendKnown(nil, in)
	out, err := ParseKnown(b)
	require.NoError(t, err)
	assert.Equal(t, in, out)
	k := NewKnown(out)
	assert.Equal(t, in, k.All())

	for _, bad := range []string{"", "rlstore-known 2\n", "rlstore-known 1\na b\n", "rlstore-known 1\na b x present\n", "rlstore-known 1\na b 1 maybe\n"} {
		_, err := ParseKnown([]byte(bad))
		assert.ErrorIs(t, err, ErrKnownFormat, "%q", bad)
	}
}

// A death keeps a member known; a graceful leave and a forget remove it;
// a node that joins later learns the dead member from the others.
func TestMembershipKnownSet(t *testing.T) {
	ns := startCluster(t, 4)
	ns[3].Kill()                   // dies
	_ = ns[2].Leaving(time.Second) // n3 is not told; what a graceful leave sends first: memberlist alone reports a leave as a death
	_ = ns[2].Close(time.Second)   // may time out waiting for the leave to reach n3
	waitMembers(t, ns[:2], 2)
	for _, n := range ns[:2] {
		require.Eventually(t, func() bool { return n.Known().Has("n3") && !n.Known().Has("n2") },
			5*time.Second, 10*time.Millisecond)
		assert.Equal(t, []string{"n0", "n1", "n3"}, names(n.Known().Members()))
	}
	late := startNode(t, "n4", []string{ns[0].GossipAddr()})
	require.Eventually(t, func() bool { return late.Known().Has("n3") && late.Known().Len() == 4 },
		5*time.Second, 10*time.Millisecond, "the joiner learns the dead member: %v", names(late.Known().Members()))
	assert.ErrorIs(t, ns[0].Forget("n0"), ErrForgetSelf)
	assert.ErrorIs(t, ns[0].Forget("nobody"), ErrUnknownNode)
	require.NoError(t, ns[0].Forget("n3"))
	for _, n := range []*testNode{ns[0], ns[1], late} {
		require.Eventually(t, func() bool { return !n.Known().Has("n3") }, 5*time.Second, 10*time.Millisecond)
	}
}
