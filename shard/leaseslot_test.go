package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseReleasedKeyGone: a key whose last lease is released is gone at
// once for every reader (its slot stays for the sweep, with no lease, so
// it has expired), a replay of what the log drained drops it, its next
// acquire starts afresh in the slot, and the sweep frees the slot.
func TestLeaseReleasedKeyGone(t *testing.T) {
	m := newMap(t, Config{})
	m.TrackChanges()
	k := []byte("pair")
	do := func(op LeaseOp, id string, limit int64) LeaseResult {
		r, err := m.Lease(k, LeaseRequest{Op: op, Limit: limit, ID: window.LeaseID([]byte(id)), TTL: time.Minute, Cost: 1}, t0)
		require.NoError(t, err)
		return r
	}
	require.True(t, do(LeaseAcquire, "a", 5).Allowed)
	replica := newMap(t, Config{})
	drain := func() {
		for i := range m.shards {
			for _, e := range m.DrainDirty(i, nil) {
				require.NoError(t, replica.Import(e, t0))
			}
		}
	}
	drain()
	require.EqualValues(t, 1, replica.Len())
	require.True(t, do(LeaseRelease, "a", 0).Allowed)

	info, ok := m.Get(k, t0)
	assert.True(t, !ok || info.Expiry <= t0, "released: the key has expired")
	assert.False(t, do(LeaseRelease, "a", 0).Allowed, "released once")
	drain()
	assert.Zero(t, replica.Len(), "the log's replay drops the key")
	other := newMap(t, Config{})
	for _, e := range m.ExportShard(int(m.hash(k)&m.mask), nil) {
		require.NoError(t, other.Import(e, t0), "an export (snapshot, handoff) of the kept slot")
	}
	assert.Zero(t, other.Len(), "imports no key")

	r := do(LeaseAcquire, "b", 3)
	assert.True(t, r.Allowed)
	assert.EqualValues(t, 1, r.InFlight, "afresh, with the acquire's limit")
	assert.EqualValues(t, 3, r.Limit)
	assert.True(t, do(LeaseRelease, "b", 0).Allowed)
	m.Sweep(t0, 1<<20)
	assert.Zero(t, m.Len(), "the sweep frees the slot")
	assert.EqualValues(t, 0, m.Stats().LeasesExpired, "released leases are no expiries")
}
