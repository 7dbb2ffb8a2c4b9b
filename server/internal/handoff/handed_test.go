package handoff

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// TestHandoffEndsALossWhateverItsHolder: a node that has a slot lost with
// a stale holder (h, which it once handed the slot to, and which handed it
// on to o since; h's death confirmed, and this node holds none of h's
// copies) takes a live handoff of the slot from o, which served it: o's
// keys are the slot's state, the loss ends, and the slot is served here;
// when the table moves it on, this node hands it over with those keys,
// and answers no RELEASED for it meanwhile. CI's TestRedPausedAtHeal at
// 98873dd: n2 had handed chunk 789-809 to n1 as the cluster formed, n1 to
// n4 when n4 joined; at n1's confirmed death n2 gained the chunk with n1
// as its holder, and lost it; n4 handed it over (its 20 used of 20), n2
// took the keys and kept the chunk lost; at n2's resume the table gave it
// to n4 again, n2 forwent it, answered n4's RELEASED with "ASK n1", and n1,
// which had not held it since the formation, released it: n4 served it
// from nothing, 22 of 20. Before, only a DONE from the holder ended a loss.
func TestHandoffEndsALossWhateverItsHolder(t *testing.T) {
	// The run's names: x is n2, h n1 and o n4; the chunk moves from n4 to
	// n2 at n1's death (the table's bounded loads).
	all := []string{"n2", "n0", "n1", "n3", "n4"}
	xho := alive(viewOf(t, 1, all))
	xo := alive(viewOf(t, 2, []string{"n2", "n0", "n3", "n4"}, "n1"))
	key := keyWhere(t, "handed", "a key of a slot n4 owns with n1, and n2 without", func(s int) bool {
		return xho.Table.Owner(s).Name == "n4" && xo.Table.Owner(s).Name == "n2"
	})
	slot := cluster.Slot(key)
	var cur atomic.Pointer[cluster.View]
	cur.Store(xho)
	fw := &slowImports{wait: time.Hour} // a handoff out stays copying: the test reads its state
	lease := cluster.NewLease("n2", time.Hour)
	lease.SentAt(lease.Now(), []string{"n2"})
	n := buildNode(t, &cur, fw, lease, true)
	n.View()
	n.ho.set(slot, nil) // served by o, whose DONE this process never saw: as a formation's
	n.switchMu.Lock()
	n.ho.holder[slot] = "n1" // handed to h at the formation: a record older than o's join
	n.switchMu.Unlock()

	cur.Store(xo)
	n.View()
	require.True(t, n.Takeover().Lost(slot), "h, its holder here, died, and x holds none of h's copies: lost")

	now := time.Now()
	p := window.Params{Kind: window.KindFixed, Limit: 20, Period: time.Hour}
	e := shard.Entry{Key: key, Params: p, State: window.State{uint64(now.UnixNano()), 20}}
	w := &nopWriter{}
	n.peerImport(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerImport), []byte("n4"),
		[]byte("reset"), []byte(strconv.Itoa(slot)), persistence.AppendEntries(nil, []shard.Entry{e}, now.UnixNano())})
	require.Equal(t, "+OK", w.last)
	n.peerDone(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerDone), []byte("n4"), []byte(strconv.Itoa(slot))})
	require.Equal(t, "+OK", w.last, "o's handoff is taken")
	assert.False(t, n.Takeover().Lost(slot), "o served the slot and handed it over: its keys are the state, no longer lost")
	assert.Empty(t, n.holderOf(slot), "held here")
	info, ok := n.store.Get(key, now.UnixNano())
	require.True(t, ok)
	assert.Equal(t, int64(20), info.Count)

	cur.Store(alive(viewOf(t, 3, all)))
	n.View() // h is back (a resumed process): the table gives the slot to o again
	st := n.State(slot)
	require.NotNil(t, st, "x hands the slot to o")
	assert.Equal(t, ModeCopying, st.Mode())
	assert.Equal(t, "n4", st.Peer().Name)
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "n4", slot), "served here until its cut: neither released nor ASK h")
}
