package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplicaPromotionOnDeath: a key at its limit stays at its limit when
// its owner dies: the runner-up, which takes the slot over, promotes its
// copy before serving it.
func TestReplicaPromotionOnDeath(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k"), replicas: true})
	ctx := context.Background()
	victim := nodes[2]
	var keys []string
	for k := 0; len(keys) < 20; k++ {
		if key := fmt.Sprint("limit:", k); ownerOf(nodes, key) == victim {
			keys = append(keys, key)
		}
	}
	rdb := newClient(t, nodes[0].addr, 2)
	for _, key := range keys {
		for range 5 {
			require.NoError(t, rdb.Do(ctx, "RL.SLIDE", key, 5, 3600).Err())
		}
		_, backup := backupOf(nodes, nodes[0], key)
		require.Eventually(t, func() bool { return sameEntry(victim.store, backup.copies, key) }, deadline, 5*time.Millisecond)
	}
	victim.ml.Kill()
	_ = victim.srv.Close()
	waitOwners(t, nodes[:2], 2)
	for _, key := range keys {
		var rep []int64
		require.Eventually(t, func() bool {
			var err error
			rep, err = rdb.Do(ctx, "RL.SLIDE", key, 5, 3600).Int64Slice()
			return err == nil
		}, deadline, 10*time.Millisecond)
		assert.Equal(t, int64(0), rep[0], "%s: still at its limit on the new owner", key)
	}
	var promoted int64
	for _, n := range nodes[:2] {
		promoted += n.srv.repl.Counts().Promoted
	}
	assert.GreaterOrEqual(t, promoted, int64(len(keys)))
}
