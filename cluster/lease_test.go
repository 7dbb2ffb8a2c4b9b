package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = int64(time.Millisecond)

func TestLeaseMajority(t *testing.T) {
	known := []string{"a", "b", "c"}
	l := NewLease("a", time.Second)
	assert.False(t, l.ValidAt(0), "starts expired")
	l.SentAt(100*ms, known)
	assert.False(t, l.ValidAt(100*ms), "its own grant is one of three")
	l.AnsweredAt(110*ms, "b", 100*ms, false, 0, known)
	assert.False(t, l.ValidAt(110*ms), "a refusal grants nothing")
	l.AnsweredAt(120*ms, "b", 100*ms, true, 0, known)
	assert.True(t, l.ValidAt(120*ms), "two of three")
	assert.True(t, l.ValidAt(1099*ms))
	assert.False(t, l.ValidAt(1100*ms), "a grant lasts a term from when the request was sent, not answered")
	assert.Equal(t, uint64(0), l.Lapses())

	// Cut off: its own requests go on, nobody answers.
	for at := 300 * ms; at < 3000*ms; at += 200 * ms {
		l.SentAt(at, known)
	}
	assert.False(t, l.ValidAt(3000*ms))
	// A late answer to an old request renews only to that request's term.
	l.AnsweredAt(3000*ms, "c", 900*ms, true, 0, known)
	assert.False(t, l.ValidAt(3000*ms))
	l.AnsweredAt(3100*ms, "c", 3000*ms, true, 0, known)
	assert.True(t, l.ValidAt(3100*ms))
	assert.Equal(t, uint64(1), l.Lapses(), "the break is counted")
	assert.False(t, l.ServesAt(3100*ms), "after a break it serves only once the takeover's wait has passed")
	l.SentAt(3800*ms, known) // renewed before it runs out again
	l.AnsweredAt(3801*ms, "b", 3800*ms, true, 0, known)
	assert.True(t, l.ValidAt(4349*ms))
	assert.False(t, l.ServesAt(4349*ms))
	assert.True(t, l.ServesAt(4351*ms))
	// An answer from the future (a forged or garbled one) is ignored.
	l.AnsweredAt(4400*ms, "c", 9000*ms, true, 0, known)
	assert.False(t, l.ValidAt(5000*ms))
}

func TestLeaseAlone(t *testing.T) {
	l := NewLease("a", time.Second)
	l.SentAt(5*ms, []string{"a"})
	assert.True(t, l.ValidAt(5*ms), "a node alone in its known set is its own majority")
	known := []string{"a", "b", "c", "d"}
	l.SentAt(10*ms, known)
	l.AnsweredAt(20*ms, "b", 10*ms, true, 0, known)
	assert.False(t, l.ValidAt(20*ms), "two of four is no majority")
	l.AnsweredAt(20*ms, "d", 10*ms, true, 0, known)
	assert.True(t, l.ValidAt(20*ms))
}

func TestLeaseDeclaredDead(t *testing.T) {
	known := []string{"a", "b", "c"}
	l := NewLease("a", time.Second)
	calls := 0
	l.OnDeclaredDead(func() { calls++ })
	l.SentAt(0, known)
	l.AnsweredAt(1*ms, "b", 0, true, 3, known) // history from before this process
	l.AnsweredAt(1*ms, "c", 0, true, 0, known)
	assert.Equal(t, 0, calls)
	// A node that served throughout ignores a death another reports (a minority's).
	l.SentAt(500*ms, known)
	l.AnsweredAt(501*ms, "b", 500*ms, true, 4, known)
	assert.Equal(t, 0, calls)
	// Paused for 30 s: the first answers after it say it was declared dead.
	l.SentAt(30500*ms, known)
	l.AnsweredAt(30501*ms, "c", 30500*ms, false, 1, known)
	require.Equal(t, 1, calls)
	assert.False(t, l.ValidAt(30501*ms))
	l.AnsweredAt(30502*ms, "b", 30500*ms, true, 4, known)
	assert.Equal(t, 1, calls, "the same death again")
}

func TestMembershipLeaseNeedsMajority(t *testing.T) {
	ns := startCluster(t, 3)
	for _, n := range ns {
		require.Eventually(t, n.Lease().Valid, 5*time.Second, 10*time.Millisecond)
	}
	ns[1].Kill()
	require.Eventually(t, func() bool { return ns[0].Lease().Valid() && ns[2].Lease().Valid() }, 5*time.Second, 10*time.Millisecond,
		"two of three hold their leases")
	ns[2].Kill()
	require.Eventually(t, func() bool { return !ns[0].Lease().Valid() }, 3*time.Second, 10*time.Millisecond,
		"one of three cannot serve")
	assert.Equal(t, 3, ns[0].Known().Len(), "deaths do not shrink the known set")
}

// TestLeaseFence: a member that declared x dead refuses x, even once it
// counts x alive again, until x acknowledges that death, which x does only
// after its slots wait for a handback (OnDeclaredDead); a majority's fences
// confirm the death.
func TestLeaseFence(t *testing.T) {
	known := []string{"a", "b", "c", "x", "y"}
	a := NewLease("a", time.Second)
	assert.True(t, a.Grants("x", true, 0))
	a.NoteDeath("x")
	assert.False(t, a.Grants("x", false, 0), "dead")
	assert.False(t, a.Grants("x", true, 0), "alive again, but it has not acknowledged its death")
	assert.Equal(t, []string{"x"}, a.AppendFenced(nil))
	assert.True(t, a.Grants("x", true, 1), "acknowledged")
	assert.Empty(t, a.AppendFenced(nil))
	a.NoteDeath("x")
	assert.False(t, a.Grants("x", true, 1), "a second death needs its own acknowledgement")

	y := NewLease("y", time.Second)
	assert.False(t, y.Confirmed("x", known))
	y.NoteDeath("x")
	y.NoteFences("a", []string{"x"})
	assert.False(t, y.Confirmed("x", known), "two of five")
	y.NoteFences("b", []string{"c", "x"})
	assert.True(t, y.Confirmed("x", known), "three of five")
	y.NoteFences("b", nil)
	assert.False(t, y.Confirmed("x", known), "b's newest answer fences x no more: x acknowledged it")

	x := NewLease("x", time.Second)
	rejoined := 0
	x.OnDeclaredDead(func() { rejoined++ })
	xk := []string{"a", "b", "x"}
	x.SentAt(0, xk)
	x.AnsweredAt(1*ms, "a", 0, true, 0, xk)
	x.AnsweredAt(1*ms, "b", 0, true, 0, xk)
	x.SentAt(200*ms, xk)
	x.AnsweredAt(201*ms, "a", 200*ms, false, 1, xk)
	assert.Equal(t, 0, rejoined, "it holds its lease: nobody took its slots")
	assert.Equal(t, uint32(0), x.AckFor("a"), "so a goes on refusing it")
	x.SentAt(1500*ms, xk)
	x.AnsweredAt(1501*ms, "b", 1500*ms, false, 1, xk)
	require.Equal(t, 1, rejoined, "its lease ran out and deaths are reported: it gives its slots up")
	assert.Equal(t, uint32(1), x.AckFor("a"))
	assert.Equal(t, uint32(1), x.AckFor("b"))
}
