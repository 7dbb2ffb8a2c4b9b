package cluster

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemberFileRemembers(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	f, err := OpenMemberFile(dir, "a", false, quiet)
	require.NoError(t, err)
	assert.Empty(t, f.Remembered(), "a new data dir remembers no member")
	k := f.Known()
	k.Add("a", "h:1")
	k.Add("b", "h:2")
	k.Add("c", "h:3")
	k.Add("d", "h:4")
	k.Add("b", "h:22") // b restarted at another address
	k.Remove("d")      // d left
	f.Close()
	f.Close() // a second Close does nothing

	g, err := OpenMemberFile(dir, "a", false, quiet)
	require.NoError(t, err)
	assert.Equal(t, []string{"h:22", "h:3"}, g.Remembered(), "b at its new address and c; not d, which left, nor this node")
	assert.Equal(t, k.All(), g.Known().All(), "the whole set, tombstones and versions too")
	g.Close()

	h, err := OpenMemberFile(dir, "a", true, quiet)
	require.NoError(t, err)
	assert.Empty(t, h.Remembered(), "fresh (--cluster-bootstrap) reads nothing")
	h.Close()
	i, err := OpenMemberFile(dir, "a", false, quiet)
	require.NoError(t, err)
	defer i.Close()
	assert.Empty(t, i.Known().All(), "and forgets the file's members")
}

func TestMemberFileRefusesAnotherFormat(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, MemberFileName), []byte("rlstore-known 9\nb h:2 1 present\n"), 0o600))
	_, err := OpenMemberFile(dir, "a", false, slog.New(slog.DiscardHandler))
	assert.ErrorIs(t, err, ErrKnownFormat)
	require.NoError(t, os.WriteFile(filepath.Join(dir, MemberFileName), []byte(knownHeader+"b h:2\n"), 0o600))
	_, err = OpenMemberFile(dir, "a", false, slog.New(slog.DiscardHandler))
	assert.ErrorIs(t, err, ErrKnownFormat)
}

// freeAddr returns a loopback address that nothing listened on a moment
// ago, below the ephemeral range: a node dials it (its seed) before
// another binds it, and a port from 127.0.0.1:0 may meanwhile become the
// local port of any dial on the host (testport.Stable).
func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + testport.Stable(t)
}

// TestWaitingUntilMet: a node given a seed that is not up yet waits,
// serving nothing alone, until it has met it (the rejoin loop retries the
// seed); with Bootstrap it does not wait; a node without seeds starts a
// cluster of its own.
func TestWaitingUntilMet(t *testing.T) {
	seed := freeAddr(t)
	a := startNode(t, "a", []string{seed})
	assert.True(t, a.View().Waiting, "a node whose seed does not answer waits")
	assert.Len(t, a.View().Table.Nodes(), 1)

	m, err := New(Config{NodeName: "boot", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:1", Seeds: []string{freeAddr(t)},
		Bootstrap: true, Timing: TestTiming(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(m.Kill)
	assert.False(t, m.View().Waiting, "Bootstrap serves alone")

	b := startNodeAt(t, "b", seed, nil)
	assert.False(t, b.View().Waiting, "the first node of a new cluster, without seeds, does not wait")
	waitMembers(t, []*testNode{a, b}, 2)
	assert.False(t, a.View().Waiting, "a met b")
	b.Kill()
	// Alone of two, a cannot confirm b's death (no majority): b stays in its
	// table, but not among its members.
	require.Eventually(t, func() bool { return len(a.View().Members) == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.False(t, a.View().Waiting, "a node that has met the cluster does not wait again")
}

// TestRememberedJoinedAtStart: remembered members are joined as seeds are.
func TestRememberedJoinedAtStart(t *testing.T) {
	b := startNode(t, "b", nil)
	m, err := New(Config{NodeName: "a", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:1", Remembered: []string{b.GossipAddr()},
		Timing: TestTiming(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(m.Kill)
	v := m.View()
	assert.False(t, v.Waiting, "the first view after New has the remembered member it joined")
	assert.Len(t, v.Table.Nodes(), 2)
}

// TestSeedOnlySelfDoesNotWait: a node whose only seed is itself (a peers
// Service that lists only this pod) has no member to wait for.
func TestSeedOnlySelfDoesNotWait(t *testing.T) {
	addr := freeAddr(t)
	n := startNodeAt(t, "solo", addr, []string{addr})
	assert.False(t, n.View().Waiting, "its only seed is itself")
}
