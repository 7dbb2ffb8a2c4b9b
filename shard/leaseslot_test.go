package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
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

// TestLedgerSettledKeyStays: a ledger whose last reservation is committed
// is gone at once (a second commit finds nothing, the log's replay drops
// it), the key's next reservation starts afresh in its slot, and the
// sweep frees the slot.
func TestLedgerSettledKeyStays(t *testing.T) {
	m := newMap(t, Config{})
	m.TrackChanges()
	p := tokenP(100, 1, time.Hour)
	key := []byte("k")
	ledger := policy.AppendLedgerKey(nil, key)
	do := func(op ReserveOp, id string) ReserveResult {
		res, err := m.Reserve(key, ledger, ref(reserveOp(op, p, id, 10)), t0)
		require.NoError(t, err)
		return res
	}
	require.True(t, do(ReserveNew, "r1").Decision.Allowed)
	replica := newMap(t, Config{})
	drain := func() {
		for i := range m.shards {
			for _, e := range m.DrainDirty(i, nil) {
				require.NoError(t, replica.Import(e, t0))
			}
		}
	}
	drain()
	require.EqualValues(t, 2, replica.Len(), "the key and its ledger")
	require.True(t, do(ReserveCommit, "r1").Done)
	assert.False(t, do(ReserveCommit, "r1").Done, "committed once")
	drain()
	assert.EqualValues(t, 1, replica.Len(), "the replay drops the ledger")
	assert.EqualValues(t, 2, m.Len(), "its slot stays for the sweep")

	require.True(t, do(ReserveNew, "r2").Decision.Allowed)
	assert.True(t, do(ReserveNew, "r2").Done, "outstanding in the slot")
	require.True(t, do(ReserveCancel, "r2").Done)
	d, err := m.Decide(key, p, t0, 1, true)
	require.NoError(t, err)
	assert.EqualValues(t, 89, d.Remaining, "r1 committed at 10, r2 given back")
	m.Sweep(t0+int64(1000*time.Hour), 1<<20) // the key refills at 1 an hour
	assert.Zero(t, m.Len(), "the sweep frees both")
}
