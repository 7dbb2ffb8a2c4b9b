package handoff

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// recorder is a Forwarder that answers every command OK and records the
// RL.PEER IMPORTs and DONEs sent, each with its last argument.
type recorder struct {
	mu   sync.Mutex
	sent []string
}

func (f *recorder) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		if sub := string(args[1]); sub == cluster.PeerImport || sub == cluster.PeerDone {
			f.sent = append(f.sent, sub+" "+string(args[len(args)-1]))
		}
		reps[i] = []byte("+OK\r\n")
	}
	return reps, nil
}

func (f *recorder) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

func (f *recorder) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// nopWriter is a resp.Writer that keeps its last simple reply.
type nopWriter struct{ last string }

func (w *nopWriter) WriteError(s string)    { w.last = "-" + s }
func (w *nopWriter) WriteString(s string)   { w.last = "+" + s }
func (w *nopWriter) WriteBulk([]byte)       {}
func (w *nopWriter) WriteBulkString(string) {}
func (w *nopWriter) WriteInt(int)           {}
func (w *nopWriter) WriteInt64(int64)       {}
func (w *nopWriter) WriteUint64(uint64)     {}
func (w *nopWriter) WriteArray(int)         {}
func (w *nopWriter) WriteNull()             {}
func (w *nopWriter) WriteRaw([]byte)        {}
func (w *nopWriter) WriteAny(any)           {}

// TestPullAnsweredOnlyWithCopies: a node answers a restarted process's
// RL.PEER PULL with DONE only for the slots it holds that process's
// copies of (its full sync brought them), not for every slot its table
// says it backs up. The simulation's cause A (seeds 32, 405, 930): a
// restarted process, whose first view came from a node that saw a slot's
// owner die, owns the slot in its first table without having seen that
// death; the slot's state is with the dead owner (paused, or cut off),
// its copies died with the crashed process, and the runner-up's DONE
// without copies let the process serve the slot from nothing. Before,
// that DONE went.
func TestPullAnsweredOnlyWithCopies(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r", "d"})
	slot, other := -1, -1
	for s := range cluster.Slots {
		if ru, ok := v.Table.RunnerUp(s); ok && ru.Name == "x" && v.Table.Owner(s).Name == "r" {
			if slot < 0 {
				slot = s
			} else if s > slot+1 {
				other = s
				break
			}
		}
	}
	require.True(t, slot >= 0 && other >= 0, "x backs up slots r owns")
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	copies, err := shard.New(shard.Config{})
	require.NoError(t, err)
	fw := &recorder{}
	n, err := New(Config{View: func() *cluster.View { return v }, Forwarder: fw, Store: store,
		Replicas: &replica.Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: fw},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)), Started: time.Now(), UnixNano: func() int64 { return time.Now().UnixNano() }})
	require.NoError(t, err)

	pull := func(slots ...int) {
		t.Helper()
		w := &nopWriter{}
		n.peerPull(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerPull), []byte("r"), []byte(formatSlots(slots))})
		require.Equal(t, "+OK", w.last)
	}
	_, backed := n.backedUpFor("r", []int{slot, other})
	assert.Empty(t, backed, "x holds no copies of r's: it answers for neither slot")
	pull(slot, other)
	time.Sleep(50 * time.Millisecond) // sendCopies runs on a goroutine of its own
	assert.Empty(t, fw.commands(), "no IMPORT, no DONE: the restarted process's import waits")

	// r's full sync names slot as backed here: x holds r's copies of it.
	drop, bits := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	bits[slot/8] |= 1 << (slot % 8)
	w := &nopWriter{}
	var st replica.Stream
	n.Replicator().PeerSync(w, &st, "r", [][]byte{drop, bits})
	require.Equal(t, "+OK", w.last)
	require.True(t, n.Replicator().HeldBy(slot, "r"))

	_, backed = n.backedUpFor("r", []int{slot, other})
	assert.Equal(t, []int{slot}, backed, "x answers for the slot it holds r's copies of, only")
	pull(slot, other)
	require.Eventually(t, func() bool { return len(fw.commands()) == 2 }, 5*time.Second, time.Millisecond)
	got := fw.commands()
	assert.Equal(t, cluster.PeerDone+" "+strconv.Itoa(slot), got[1], "DONE names the held slot alone")
	assert.Contains(t, got[0], cluster.PeerImport)
}

// TestReleasedAsksTheDeadOwner: a node asked RL.PEER RELEASED for a slot
// its table gave the asker because the slot's owner died, holding none of
// the asker's copies of it, answers "ASK" that dead owner instead of
// releasing it; once it holds the asker's copies (the asker served the
// slot and synced it here), it releases it. The simulation's cause A
// (seed 32): a restarted process whose first table lacked the dead owner
// imported the slot from its runner-up, which sent no DONE (no copies)
// and then released it: the process served it from nothing while the
// dead owner, cut off, held its keys. Before, the runner-up released it.
func TestReleasedAsksTheDeadOwner(t *testing.T) {
	v1 := viewOf(t, 1, []string{"x", "r", "d"})
	v2 := viewOf(t, 2, []string{"x", "r"}, "d")
	slot := -1
	for s := range cluster.Slots {
		if v1.Table.Owner(s).Name == "d" && v2.Table.Owner(s).Name == "r" {
			slot = s
			break
		}
	}
	require.GreaterOrEqual(t, slot, 0, "a slot d owned that r owns once d died")
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	copies, err := shard.New(shard.Config{})
	require.NoError(t, err)
	fw := &recorder{}
	var cur atomic.Pointer[cluster.View]
	cur.Store(v1)
	n, err := New(Config{View: cur.Load, Forwarder: fw, Store: store,
		Replicas: &replica.Config{Feed: persistence.NewFeed(store), Copies: copies, Ship: fw},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)), Started: time.Now(), UnixNano: func() int64 { return time.Now().UnixNano() }})
	require.NoError(t, err)
	cur.Store(v2)
	n.View()

	released := func() string {
		t.Helper()
		w := &nopWriter{}
		n.peerReleased(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerReleased), []byte("r"), []byte(strconv.Itoa(slot))})
		return w.last
	}
	assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" d "+strconv.Itoa(slot), released(),
		"x holds no copies of r's: the slot's state was d's")

	drop, bits := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	bits[slot/8] |= 1 << (slot % 8)
	w := &nopWriter{}
	var st replica.Stream
	n.Replicator().PeerSync(w, &st, "r", [][]byte{drop, bits})
	require.Equal(t, "+OK", w.last)
	assert.Equal(t, "+"+strconv.Itoa(slot), released(), "r served the slot since and synced it here: released")
}
