package cluster

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restartLease is a new process of node self: a new lease that keeps its
// death counts in f, as Config.Deaths makes it (nil f: no data dir).
func restartLease(self string, f *DeathFile) *Lease {
	l := NewLease(self, time.Second)
	if f != nil {
		l.KeepDeaths(f.Saved(), f.Save)
	}
	return l
}

// TestLeaseRestartKeepsFences: of five nodes, f and g fenced x (paused,
// say) and then restarted while x had not acknowledged its death. x's
// request, acknowledging nothing, must not get their grants: with its own
// vote they are three of five, a lease the majority that confirmed x's
// death and gave its slots away never granted (the simulation's seed 152
// before fences survived restarts). Their data dirs' death files keep the
// fences; without them the new processes grant x.
func TestLeaseRestartKeepsFences(t *testing.T) {
	known := []string{"f", "g", "h", "i", "x"}
	grants := func(keep bool) int {
		n := 1 // x's own vote
		for _, self := range []string{"f", "g"} {
			var file *DeathFile
			if keep {
				var err error
				file, err = OpenDeathFile(t.TempDir(), false)
				require.NoError(t, err)
			}
			before := restartLease(self, file)
			require.NoError(t, before.NoteDeath("x"))
			after := restartLease(self, file) // a restart: the old process's memory is gone
			if after.GrantsAt(0, "x", true, 0) {
				n++
			}
		}
		return n
	}
	assert.Less(t, grants(true), Quorum(len(known)), "restarted fencers keep refusing x")
	assert.Equal(t, Quorum(len(known)), grants(false), "without a data dir they forget, and x's lease is renewed")
}

// TestLeaseRestartedFenceAnnounced: a restarted process refuses a member
// until it acknowledges the saved count, and says it fences the member only
// once the member's request shows the fence still holds: a fence the
// member ended before the restart never counts toward a confirmation while
// this node grants the member.
func TestLeaseRestartedFenceAnnounced(t *testing.T) {
	file, err := OpenDeathFile(t.TempDir(), false)
	require.NoError(t, err)
	a := restartLease("a", file)
	require.NoError(t, a.NoteDeath("x"))
	require.NoError(t, a.NoteDeath("y"))
	assert.True(t, a.GrantsAt(0, "y", true, 1), "y acknowledged its death")
	assert.Equal(t, []string{"x"}, a.AppendFenced(nil))

	b := restartLease("a", file)
	assert.Equal(t, uint32(1), b.Deaths("x"))
	assert.Equal(t, uint32(1), b.Deaths("y"))
	assert.Empty(t, b.AppendFenced(nil), "no request has come yet")
	assert.False(t, b.ConfirmedAt("x", []string{"a"}, 0), "nor counts it for itself")
	assert.False(t, b.GrantsAt(0, "x", true, 0), "x has not acknowledged")
	assert.Equal(t, []string{"x"}, b.AppendFenced(nil), "x's request shows the fence holds")
	assert.True(t, b.GrantsAt(0, "y", true, 1))
	assert.Equal(t, []string{"x"}, b.AppendFenced(nil))
	assert.True(t, b.GrantsAt(0, "x", true, 1), "acknowledged now")
	assert.Empty(t, b.AppendFenced(nil))

	require.NoError(t, b.NoteDeath("y"))
	c := restartLease("a", file)
	assert.Equal(t, uint32(2), c.Deaths("y"), "a death after the restart is saved too")
}

// TestLeaseDeathSavedBeforeItFences: NoteDeath's save runs before the
// death counts anywhere, and a death it could not save is not counted: the
// node neither fences the member nor counts toward its confirmation, which
// a restart could not take back.
func TestLeaseDeathSavedBeforeItFences(t *testing.T) {
	l := NewLease("a", time.Second)
	var during []string
	fail := errors.New("disk full")
	var err error
	l.KeepDeaths(nil, func(c map[string]uint32) error {
		during = l.AppendFenced(nil)
		assert.Equal(t, c["x"]-1, l.Deaths("x"), "not counted while it is being saved")
		return err
	})
	require.NoError(t, l.NoteDeath("x"))
	assert.Empty(t, during)
	assert.Equal(t, uint32(1), l.Deaths("x"))
	assert.False(t, l.GrantsAt(0, "x", true, 0))

	err = fail
	assert.ErrorIs(t, l.NoteDeath("x"), fail)
	assert.Equal(t, uint32(1), l.Deaths("x"), "the unsaved death is not counted")
	assert.True(t, l.GrantsAt(0, "x", true, 1), "x acknowledged the one saved")
}

func TestDeathFile(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenDeathFile(dir, false)
	require.NoError(t, err)
	assert.Empty(t, f.Saved(), "a new data dir has none")
	require.NoError(t, f.Save(map[string]uint32{"b": 2, "a": 1}))
	b, err := os.ReadFile(filepath.Join(dir, DeathFileName))
	require.NoError(t, err)
	assert.Equal(t, "rlstore-deaths 1\na 1\nb 2\n", string(b))

	g, err := OpenDeathFile(dir, false)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint32{"a": 1, "b": 2}, g.Saved())
	h, err := OpenDeathFile(dir, true)
	require.NoError(t, err)
	assert.Empty(t, h.Saved(), "--cluster-bootstrap starts a new cluster")
	i, err := OpenDeathFile(dir, false)
	require.NoError(t, err)
	assert.Empty(t, i.Saved(), "and forgets the file's deaths")
	assert.Nil(t, (*DeathFile)(nil).Saved())

	for _, bad := range []string{"rlstore-deaths 9\na 1\n", "rlstore-deaths 1\na\n", "rlstore-deaths 1\na -1\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, DeathFileName), []byte(bad), 0o600))
		_, err = OpenDeathFile(dir, false)
		assert.ErrorIs(t, err, ErrDeathFormat, "%q", bad)
	}
}

// TestPrepareRestoresDeaths: a membership given a death file fences, from
// its start, the members its file says an earlier process fenced.
func TestPrepareRestoresDeaths(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenDeathFile(dir, false)
	require.NoError(t, err)
	require.NoError(t, f.Save(map[string]uint32{"x": 3}))
	m, err := Prepare(Config{NodeName: "n", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:1", Timing: TestTiming(),
		Logger: slog.New(slog.DiscardHandler), Deaths: f})
	require.NoError(t, err)
	t.Cleanup(m.Kill)
	assert.Equal(t, uint32(3), m.Lease().Deaths("x"))
	assert.False(t, m.Lease().Grants("x", true, 2))
	require.NoError(t, m.Lease().NoteDeath("x"))
	g, err := OpenDeathFile(dir, false)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint32{"x": 4}, g.Saved())
}
