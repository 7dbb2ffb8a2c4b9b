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

// TestHandbacksJoinInEitherOrder: x, back after its death, waits for its
// slot's handback from p; p and q, each of which served the slot while
// the other was cut off, both push their kept keys (mode handback, then a
// DONE). Whichever comes first, x serves the larger count: 130, q's. The
// simulation's cold seed 1418: q's push (130) came first, p's (121) then
// replaced it and its DONE ended the import, and the key admitted 157
// against a bound of 156. Before, the second push replaced the first (p
// last), or filled only the keys x lacked once the slot was served (q
// last): 121 either way.
func TestHandbacksJoinInEitherOrder(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "p", "q"})
	for _, m := range v.Table.Nodes() {
		v.Members = append(v.Members, cluster.Member{Node: m, State: cluster.StateAlive})
	}
	key := keyWhere(t, "hb", "a key of a slot x owns", func(slot int) bool { return v.Table.Owner(slot).Name == "x" })
	slot := cluster.Slot(key)
	p, _ := v.Table.Node("p")
	now := time.Now()
	for _, order := range [][]string{{"q", "p"}, {"p", "q"}} {
		var cur atomic.Pointer[cluster.View]
		cur.Store(v)
		n := testNode(t, &cur, &recorder{})
		used := func(n uint64) shard.Entry {
			return shard.Entry{Key: key, Params: window.Params{Kind: window.KindFixed, Limit: 200, Period: time.Hour},
				State: window.State{uint64(now.UnixNano()), n}}
		}
		require.NoError(t, n.store.Import(used(40), now.UnixNano())) // what x served before it was cut off
		awaitHandback(n, slot, p)
		pushed := map[string]uint64{"p": 121, "q": 130}
		for _, from := range order {
			e := used(pushed[from])
			w := &nopWriter{}
			n.peerImport(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerImport), []byte(from),
				[]byte("handback"), []byte(strconv.Itoa(slot)), persistence.AppendEntries(nil, []shard.Entry{e}, now.UnixNano())})
			require.Equal(t, "+OK", w.last, "%v: %s's IMPORT", order, from)
			n.peerDone(&core.Session{Out: w}, [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerDone), []byte(from), []byte(strconv.Itoa(slot))})
			require.Equal(t, "+OK", w.last, "%v: %s's DONE", order, from)
		}
		assert.Nil(t, n.ho.state(slot), "%v: x serves the slot (p's DONE ended the import)", order)
		info, ok := n.store.Get(key, now.UnixNano())
		require.True(t, ok)
		assert.Equal(t, int64(130), info.Count, "%v: the larger of the pushed counts", order)
	}
}
