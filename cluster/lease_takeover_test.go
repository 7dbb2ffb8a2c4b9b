package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// takenOver returns the views of node self before and after x's death
// among known, and a slot that x's death gives self.
func takenOver(t *testing.T, self, x string, known []string) (*View, *View, int) {
	t.Helper()
	var all, rest []Node
	for _, k := range known {
		all = append(all, Node{Name: k})
		if k != x {
			rest = append(rest, Node{Name: k})
		}
	}
	before, err := NewTable(1, all)
	require.NoError(t, err)
	after, err := NewTable(2, rest)
	require.NoError(t, err)
	for slot := range Slots {
		if before.Owner(slot).Name == x && after.Owner(slot).Name == self {
			old := &View{Self: self, Table: before}
			nv := &View{Self: self, Table: after, Gone: []Member{{Node: Node{Name: x}, State: StateDead}}}
			return old, nv, slot
		}
	}
	t.Fatalf("no slot of %s goes to %s", x, self)
	return nil, nil, 0
}

// TestLeaseTakeoverAfterTheLastGrant: a dead member's slots wait until its
// lease has run out for sure, TakeoverWait after the quorum-th earliest
// last grant among its fencers (ConfirmedAt), and at most TakeoverWait
// from the confirmation (NextTakeover). A fencer whose answers carry no
// grant ages (the second form) counts as granting at its answer.
func TestLeaseTakeoverAfterTheLastGrant(t *testing.T) {
	known := []string{"a", "b", "c", "d", "x"}
	wait := int64(1250 * ms) // TakeoverWait of a 1 s term
	tests := []struct {
		name    string
		mine    int64            // when a last granted x
		ages    map[string]int64 // fencer → the age of its last grant to x, at its answer (nil: the second form)
		recv    int64            // when the fencers' answers came, and the confirmation
		wantEnd int64            // the takeover's end: x's slot waits before it, not at it
	}{
		{name: "granted long ago: at once", mine: 100 * ms, recv: 5000 * ms,
			ages: map[string]int64{"b": 4900 * ms, "c": 4800 * ms}, wantEnd: 200*ms + wait},
		{name: "granted recently: TakeoverWait after that grant", mine: 100 * ms, recv: 2000 * ms,
			ages: map[string]int64{"b": 1600 * ms, "c": 200 * ms}, wantEnd: 1800*ms + wait},
		{name: "more fencers than a quorum: the quorum-th earliest grant", mine: 1900 * ms, recv: 2000 * ms,
			ages: map[string]int64{"b": 1900 * ms, "c": 1800 * ms, "d": 50 * ms}, wantEnd: 1900*ms + wait},
		{name: "second-form fencers: TakeoverWait from now", mine: 100 * ms, recv: 5000 * ms,
			wantEnd: 5000*ms + wait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLease("a", time.Second)
			require.Equal(t, time.Duration(wait), l.TakeoverWait())
			require.True(t, l.GrantsAt(tt.mine, "x", true, 0))
			l.NoteDeath("x")
			fencers := []string{"b", "c"}
			if len(tt.ages) > 2 {
				fencers = append(fencers, "d")
			}
			for _, f := range fencers {
				var ages []int64
				if tt.ages != nil {
					ages = []int64{tt.ages[f]}
				}
				l.NoteGrantAgesAt(f, tt.recv-10*ms, tt.recv, []string{"x"}, ages)
				l.NoteFencesAt(f, tt.recv-10*ms, []string{"x"})
			}
			require.True(t, l.ConfirmedAt("x", known, tt.recv), "a, b and c fence x: three of five")
			old, nv, slot := takenOver(t, "a", "x", known)
			tk := l.NextTakeover(nil, old, nv, tt.recv)
			end := max(tt.wantEnd, tt.recv)
			if end > tt.recv {
				assert.True(t, tk.Waits(slot, end-ms), "x's slot at %v, want waiting until %v", time.Duration(end-ms), time.Duration(end))
			}
			assert.False(t, tk.Waits(slot, end), "x's slot at %v, want served", time.Duration(end))
		})
	}
}

// TestLeaseTakeoverWithoutConfirmation: a member that left the table
// without a confirmation here (an operator forgot it), or whose recorded
// confirmation was of an earlier death, waits TakeoverWait from now.
func TestLeaseTakeoverWithoutConfirmation(t *testing.T) {
	known := []string{"a", "b", "c", "d", "x"}
	l := NewLease("a", time.Second)
	old, nv, slot := takenOver(t, "a", "x", known)
	now := 3000 * ms
	tk := l.NextTakeover(nil, old, nv, now)
	assert.True(t, tk.Waits(slot, now+1249*ms), "no confirmation")
	assert.False(t, tk.Waits(slot, now+1250*ms))

	l.NoteDeath("x")
	for _, f := range []string{"b", "c"} {
		l.NoteGrantAgesAt(f, 90*ms, 100*ms, []string{"x"}, []int64{0})
		l.NoteFencesAt(f, 90*ms, []string{"x"})
	}
	require.True(t, l.ConfirmedAt("x", known, 100*ms))
	l.NoteDeath("x") // a second death, not confirmed yet
	tk = l.NextTakeover(nil, old, nv, now)
	assert.True(t, tk.Waits(slot, now+1249*ms), "the confirmation was of the first death")
}

// TestLeaseGrantAges: a node's answers carry how long ago it last granted
// each member it fences, and how long this process has run for one it
// never granted; an answer to an older request than the latest recorded
// changes nothing.
func TestLeaseGrantAges(t *testing.T) {
	l := NewLease("a", time.Second)
	require.True(t, l.GrantsAt(300*ms, "x", true, 0))
	assert.Equal(t, []int64{700 * ms, 1000 * ms}, l.GrantAgesAt(1000*ms, []string{"x", "y"}))
	assert.Equal(t, []int64{0}, l.GrantAgesAt(200*ms, []string{"x"}), "a clock behind the grant: no negative age")

	known := []string{"a", "b", "x"}
	l.NoteDeath("x")
	l.NoteGrantAgesAt("b", 1000*ms, 1010*ms, []string{"x"}, []int64{900 * ms})
	l.NoteFencesAt("b", 1000*ms, []string{"x"})
	l.NoteGrantAgesAt("b", 900*ms, 1020*ms, []string{"x"}, nil) // an older request's second-form answer
	l.NoteFencesAt("b", 900*ms, []string{"x"})
	require.True(t, l.ConfirmedAt("x", known, 1100*ms))
	old, nv, slot := takenOver(t, "a", "x", known)
	tk := l.NextTakeover(nil, old, nv, 1100*ms)
	assert.False(t, tk.Waits(slot, 300*ms+1250*ms), "b's grant at 110ms and a's at 300ms: out at 1.55s")
	assert.True(t, tk.Waits(slot, 300*ms+1249*ms))
}

// TestLeaseWaitFor: slots whose state a dead holder held (an import from
// it, the server's fromDeadLocked) wait as its own slots do: until its
// lease has run out for sure, at most TakeoverWait, and TakeoverWait for
// a holder whose death this node saw no confirmation of.
func TestLeaseWaitFor(t *testing.T) {
	known := []string{"a", "b", "c", "d", "x"}
	l := NewLease("a", time.Second)
	assert.Equal(t, 1250*time.Millisecond, l.WaitFor("x", 5000*ms), "no confirmation")
	require.True(t, l.GrantsAt(100*ms, "x", true, 0))
	l.NoteDeath("x")
	for f, age := range map[string]int64{"b": 1000 * ms, "c": 4800 * ms} {
		l.NoteGrantAgesAt(f, 4990*ms, 5000*ms, []string{"x"}, []int64{age})
		l.NoteFencesAt(f, 4990*ms, []string{"x"})
	}
	require.True(t, l.ConfirmedAt("x", known, 5000*ms))
	// a's grant at 100ms, c's at 200ms, b's at 4000ms: the quorum-th earliest is 4000ms, out at 5.25s.
	assert.Equal(t, 250*time.Millisecond, l.WaitFor("x", 5000*ms))
	assert.Equal(t, time.Duration(0), l.WaitFor("x", 6000*ms), "run out: no wait")
	l.NoteDeath("x")
	assert.Equal(t, 1250*time.Millisecond, l.WaitFor("x", 6000*ms), "the confirmation was of the first death")
}
