package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseReplicaCopy: leases taken through any node reach their key's
// owner and, within an interval, its backup's copy; a release reaches the
// copy too.
func TestLeaseReplicaCopy(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k"), replicas: true})
	ctx := context.Background()
	rdb := newClient(t, nodes[0].addr, 2)
	var keys []string
	for k := range 30 {
		key := fmt.Sprint("pool:", k)
		keys = append(keys, key)
		for i := range 1 + k%3 {
			v, err := rdb.Do(ctx, "RL.ACQUIRE", key, 5, "1h", "ID", fmt.Sprint("w", i)).Slice()
			require.NoError(t, err)
			require.Equal(t, int64(1), v[0])
		}
	}
	for _, key := range keys {
		owner, backup := backupOf(nodes, nodes[0], key)
		require.Eventually(t, func() bool { return sameEntry(owner.store, backup.copies, key) }, deadline, 5*time.Millisecond,
			"%s: the copy on %s equals the leases on %s", key, backup.name, owner.name)
	}
	key := keys[2] // three leases
	require.Equal(t, int64(1), wantInt(t, rdb, "RL.RELEASE", key, "w1"))
	owner, backup := backupOf(nodes, nodes[0], key)
	require.Eventually(t, func() bool { return sameEntry(owner.store, backup.copies, key) }, deadline, 5*time.Millisecond,
		"the release reached the copy")
	e, ok := backup.copies.Lookup([]byte(key), []byte(key))
	require.True(t, ok)
	assert.Len(t, e.Counters, 4, "two leases left in the copy")
}

// TestLeaseHandoffOnLeave: a node that leaves gracefully hands its keys'
// leases over exactly: after the leave each lease releases once, and the
// limits still bind.
func TestLeaseHandoffOnLeave(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{})
	var keys []string
	for _, k := range testKeys("lease:", 200) {
		if ownerOf(nodes, k) == nodes[1] {
			keys = append(keys, k)
		}
	}
	require.NotEmpty(t, keys)
	rdb := newClient(t, nodes[0].addr, 2)
	ctx := context.Background()
	for _, k := range keys {
		for _, id := range []string{"a", "b"} {
			v, err := rdb.Do(ctx, "RL.ACQUIRE", k, 2, "1h", "ID", id).Slice()
			require.NoError(t, err)
			require.Equal(t, int64(1), v[0])
		}
	}
	hctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	require.NoError(t, nodes[1].srv.HandOff(hctx))
	require.NoError(t, nodes[1].ml.Leaving(time.Second))
	waitOwners(t, []*testNode{nodes[0], nodes[2]}, 2)
	for _, k := range keys {
		v := settled(t, rdb, "RL.ACQUIRE", k, 2, "1h", "ID", "c").([]any)
		assert.Equal(t, int64(0), v[0], "%s: both leases came over, the limit binds", k)
		assert.Equal(t, int64(1), settled(t, rdb, "RL.RELEASE", k, "a"), k)
		assert.Equal(t, int64(0), settled(t, rdb, "RL.RELEASE", k, "a"), k)
	}
}

// settled runs a command until the cluster answers it, through the
// window in which a loaded host may still see a slot's owner as moving
// (CLUSTERDOWN), and returns its reply.
func settled(t *testing.T, c *redis.Client, args ...any) any {
	t.Helper()
	var v any
	require.Eventually(t, func() bool {
		var err error
		v, err = c.Do(context.Background(), args...).Result()
		if err != nil && !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			require.NoError(t, err, "%v", args)
		}
		return err == nil
	}, deadline, 5*time.Millisecond, "%v", args)
	return v
}
