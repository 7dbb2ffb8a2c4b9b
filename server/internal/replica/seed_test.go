package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeedNeverOverwritesASync: an old owner's seed of the keys it handed
// over is kept as the new owner's copies of the slots this node backs up
// for it, held from it; a slot backed up by another node is left out, and
// so is one whose full sync from the new owner has begun or ended: the
// seed is older than what that sync brings.
func TestSeedNeverOverwritesASync(t *testing.T) {
	r := testReplicator(t, &clock{}, 0)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.peers {
			p.close()
		}
	})
	tb, err := cluster.NewTable(1, []cluster.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	require.NoError(t, err)
	r.OnTable(nil, &cluster.View{Self: "a", Table: tb})
	var mine, other string // keys of b's slots that a, then c, backs up
	for i := 0; mine == "" || other == ""; i++ {
		k := fmt.Sprint("seed:", i)
		s := cluster.Slot([]byte(k))
		if ru, _ := tb.RunnerUp(s); tb.Owner(s).Name == "b" && ru.Name == "a" && mine == "" {
			mine = k
		} else if tb.Owner(s).Name == "b" && ru.Name == "c" && other == "" {
			other = k
		}
	}
	slotOf := func(k string) int { return cluster.Slot([]byte(k)) }
	payload := func(limit int64) []byte { // both keys, used once, under limit
		store, err := shard.New(shard.Config{})
		require.NoError(t, err)
		p := window.Params{Kind: window.KindSlide, Limit: limit, Period: time.Hour}
		var es []shard.Entry
		for _, k := range []string{mine, other} {
			_, err := store.Decide([]byte(k), p, time.Now().UnixNano(), 1, false)
			require.NoError(t, err)
			e, ok := store.Lookup([]byte(k), policy.Route([]byte(k)))
			require.True(t, ok)
			es = append(es, e)
		}
		return persistence.AppendEntries(nil, es, time.Now().UnixNano())
	}
	limitOf := func(k string) int64 {
		e, ok := r.cfg.Copies.Lookup([]byte(k), policy.Route([]byte(k)))
		if !ok {
			return 0
		}
		return e.Params.Limit
	}
	slots := []int{slotOf(mine), slotOf(other)}

	n, err := r.Seed("b", slots, payload(10))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the slot a backs up for b")
	assert.True(t, r.HeldBy(slotOf(mine), "b"), "held from b, as a full sync's copies")
	assert.Equal(t, int64(10), limitOf(mine))
	assert.False(t, r.HeldBy(slotOf(other), "b"))
	assert.Zero(t, limitOf(other), "c backs that slot up, not a")

	// b's full sync begins: its copies are newer than any seed.
	backed := make([]byte, cluster.Slots/8)
	backed[slotOf(mine)/8] |= 1 << (slotOf(mine) % 8)
	var st Stream
	w := &replyWriter{}
	r.PeerSync(w, &st, "b", [][]byte{backed, backed, []byte(cluster.PeerSyncEnds)})
	require.Equal(t, "+OK", w.last)
	n, err = r.Seed("b", slots, payload(20))
	require.NoError(t, err)
	assert.Zero(t, n, "b's full sync has begun")
	assert.Zero(t, limitOf(mine), "the sync dropped the seed; no later seed comes back over it")
	r.PeerSynced(w, &st)
	require.Equal(t, "+OK", w.last)
	n, err = r.Seed("b", slots, payload(30))
	require.NoError(t, err)
	assert.Zero(t, n, "b's full sync has ended")
	assert.True(t, r.HeldBy(slotOf(mine), "b"))
}
