package handoff

import (
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// TestJoinerSeedsDeadPrevFromKnown: a new process records, for the known
// members it never had in a table, the slots they own in the table of every
// known member as theirs (deadPrev), and keeps that mark on a slot that
// moves on while it imports it: asked by the slot's next owner, it answers
// its PULL without a DONE and its RELEASED with "ASK" the dead member; the
// member's return clears the mark. The simulation's seed 1508: n4's new
// process, whose first table lacked n2 (paused, its death confirmed, with
// the slot's state), imported the slot as its own; the slot then moved to
// n3's new process, whose PULL n4 answered with a DONE without copies, and
// n3 served it from nothing. Before, a new process recorded no deadPrev.
func TestJoinerSeedsDeadPrevFromKnown(t *testing.T) {
	all := viewOf(t, 1, []string{"x", "r", "d", "c"})
	shared := viewOf(t, 3, []string{"x", "r"})
	back := viewOf(t, 4, []string{"x", "r", "c"})
	slot := slotWhere(t, "a slot of d's that x imports, then c owns with x its backup", func(slot int) bool {
		ru, ok := back.Table.RunnerUp(slot)
		return all.Table.Owner(slot).Name == "d" && shared.Table.Owner(slot).Name == "x" &&
			back.Table.Owner(slot).Name == "c" && ok && ru.Name == "x"
	})
	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 2, []string{"x"})) // a new process: alone until it meets the members
	n := joinerNode(t, &cur, func() []string { return []string{"c", "d", "r", "x"} })
	cur.Store(shared)
	n.View()
	require.Equal(t, ModeImporting, n.ho.state(slot).Mode(), "x imports the slot its first shared table gives it")
	cur.Store(back)
	n.View()

	_, backed := n.backedUpFor("c", []int{slot})
	assert.Empty(t, backed, "x never had the slot's state, which was d's: no DONE without c's copies")
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), releasedTo(n, "c", slot))

	cur.Store(viewOf(t, 5, []string{"x", "r", "c", "d"}))
	n.View()
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	assert.Empty(t, n.ho.deadPrev[slot], "d is back: its slots' marks go")
}

// joinerNode is testNode for a process started with seeds, whose known
// member set known returns.
func joinerNode(t *testing.T, cur *atomic.Pointer[cluster.View], known func() []string) *Node {
	t.Helper()
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	copies, err := shard.New(shard.Config{})
	require.NoError(t, err)
	fw := &recorder{}
	n, err := New(Config{View: cur.Load, Forwarder: fw, Store: store, Joins: true, Known: known,
		Replicas: &replica.Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: fw},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)), Started: time.Now(), UnixNano: func() int64 { return time.Now().UnixNano() }})
	require.NoError(t, err)
	return n
}
