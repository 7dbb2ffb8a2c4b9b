package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// useUp sends key RL.SLIDE 5 3600 through c until it is at its limit:
// a loaded host's in-process cluster may answer a request CLUSTERDOWN for
// a moment (a membership flap), which a test's setup must not fail on.
func useUp(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		rep, err := c.Do(context.Background(), "RL.SLIDE", key, 5, 3600).Int64Slice()
		return err == nil && rep[0] == 0
	}, deadline, time.Millisecond, "%s used up", key)
}

// shipsNowhere is the shipping transport of a node whose shipments fail
// while on is set: its backups get no full sync.
type shipsNowhere struct {
	cluster.Forwarder
	on *atomic.Bool
}

func (f shipsNowhere) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	if f.on.Load() {
		return nil, cluster.ErrUnreachable
	}
	return f.Forwarder.Forward(ctx, addr, cmds)
}

func (f shipsNowhere) Send(addr string, lane uint64, payload []byte, n int, r cluster.Replier) {
	if f.on.Load() {
		r.Replies(nil, cluster.ErrUnreachable)
		return
	}
	f.Forwarder.Send(addr, lane, payload, n, r)
}

// TestOldOwnerSeedsTheNewBackup is the lost-slot gap of a new owner killed
// before its first full sync to the slot's backup (loadtest/cluster.py's
// kill timing: 2 kills of 5): when two nodes join at once, the node that
// hands a slot over may not be its backup in the final table, and the
// backup held nothing of it until the new owner's full sync. Now the old
// owner seeds the backup with what it handed over, and the backup takes
// the slot over from it; a slot the backup holds nothing of is lost, as
// before.
func TestOldOwnerSeedsTheNewBackup(t *testing.T) {
	var calls atomic.Int32
	var cutOff atomic.Bool
	nodes := startTestCluster(t, 3, clusterOpts{replicas: true, wrapShip: func(f cluster.Forwarder) cluster.Forwarder {
		if calls.Add(1) == 3 { // node2's: nodes start one at a time
			return shipsNowhere{f, &cutOff}
		}
		return f
	}})
	a, b, c := nodes[0], nodes[1], nodes[2]
	var keys []string
	var slots []int
	for _, k := range testKeys("seed:", 2000) {
		slot := cluster.Slot([]byte(k))
		if owner, backup := backupOf(nodes, a, k); owner == c && backup == b && (len(slots) == 0 || slots[0] != slot) {
			keys, slots = append(keys, k), append(slots, slot)
			if len(keys) == 2 {
				break
			}
		}
	}
	require.Len(t, keys, 2, "two keys of c's, in two slots, that b backs up")
	ca := newClient(t, a.addr, 2)
	for _, k := range keys {
		useUp(t, ca, k)
	}
	// As if c had just taken the slots over from a, which is not their
	// backup, and not yet fully synced b: b holds nothing of c's.
	cutOff.Store(true)
	b.srv.repl.ForgetHeld()
	require.False(t, b.srv.repl.HeldBy(slots[0], c.name))
	for _, k := range keys {
		e, ok := c.store.Lookup([]byte(k), policy.Route([]byte(k)))
		require.True(t, ok)
		require.NoError(t, a.store.Import(e, time.Now().UnixNano()))
	}
	// a hands the first slot over to c (its owner already: c keeps its keys).
	cn, _ := a.ml.View().Table.Node(c.name)
	a.srv.ho.Probe().Migrate(cn, slots[:1], false)
	require.Eventually(t, func() bool { return b.srv.repl.HeldBy(slots[0], c.name) }, deadline, 5*time.Millisecond,
		"a's cut seeds b, the slot's backup, with what it handed c")
	assert.False(t, b.srv.repl.HeldBy(slots[1], c.name), "the other slot was not handed over")
	assert.NotZero(t, b.srv.repl.Counts().Seeded)

	c.ml.Kill()
	_ = c.srv.Close()
	waitOwners(t, []*testNode{a, b}, 2)
	require.Eventually(t, func() bool {
		rep, err := ca.Do(context.Background(), "RL.SLIDE", keys[0], 5, 3600).Int64Slice()
		return err == nil && rep[0] == 0
	}, deadline, 10*time.Millisecond, "b takes the seeded slot over, its key at its limit")
	assert.False(t, b.srv.ho.Takeover().Lost(slots[0]))
	assert.True(t, b.srv.ho.Takeover().Lost(slots[1]), "the slot b holds nothing of is lost")
	err := ca.Do(context.Background(), "RL.SLIDE", keys[1], 5, 3600).Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CLUSTERDOWN")
}
