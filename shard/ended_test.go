package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func at(d time.Duration) int64 { return t0 + int64(d) }

// TestLeasesExpiredCounted: every lease whose TTL runs out counts once in
// Stats.LeasesExpired, wherever it is dropped: pruned by the key's next
// change, by an acquire that starts a key whose last lease ended afresh,
// by the sweep; releases never count, nor does a clock stepping back.
func TestLeasesExpiredCounted(t *testing.T) {
	m := newMap(t, Config{})
	lease := func(key string, op LeaseOp, id string, ttl time.Duration, now int64) bool {
		r, err := m.Lease([]byte(key), LeaseRequest{Op: op, Limit: 10, ID: window.LeaseID([]byte(id)), TTL: ttl, Cost: 1}, now)
		require.NoError(t, err)
		return r.Allowed
	}
	expired := func() int64 { return m.Stats().LeasesExpired }
	for _, id := range []string{"a", "b", "c"} {
		require.True(t, lease("k", LeaseAcquire, id, time.Second, t0))
	}
	require.True(t, lease("k", LeaseAcquire, "d", time.Hour, t0))
	require.True(t, lease("k", LeaseRelease, "a", 0, t0))
	assert.EqualValues(t, 0, expired(), "a release is no expiry")

	assert.False(t, lease("k", LeaseRelease, "b", 0, at(2*time.Second)), "b ran out")
	assert.EqualValues(t, 2, expired(), "b and c, pruned by the release")
	assert.False(t, lease("k", LeaseRelease, "c", 0, at(3*time.Second)))
	assert.EqualValues(t, 2, expired(), "once")
	assert.False(t, lease("k", LeaseRenew, "c", time.Second, t0), "the clock stepped back")
	assert.EqualValues(t, 2, expired())

	require.True(t, lease("j", LeaseAcquire, "a", time.Second, t0))
	require.True(t, lease("j", LeaseAcquire, "b", time.Second, t0))
	require.True(t, lease("j", LeaseAcquire, "c", time.Second, at(3*time.Second)), "j starts afresh")
	assert.EqualValues(t, 4, expired(), "j's a and b")

	require.True(t, lease("s", LeaseAcquire, "a", time.Second, t0))
	assert.False(t, lease("s", LeaseRenew, "a", time.Second, at(2*time.Second)), "an ended key is absent")
	assert.EqualValues(t, 4, expired(), "and stays until the sweep")
	m.Sweep(at(time.Minute), 1<<20)
	assert.EqualValues(t, 6, expired(), "the sweep freed s and j, one lease each")
	m.Sweep(at(2*time.Minute), 1<<20)
	assert.EqualValues(t, 6, expired())
	assert.True(t, lease("k", LeaseRelease, "d", 0, at(2*time.Minute)))
	assert.EqualValues(t, 6, expired())
}

// TestReservationsExpiredCounted: every reservation whose TTL runs out
// counts once in Stats.ReservationsExpired, whether it commits (the
// default) or is given back, wherever its ledger drops it.
func TestReservationsExpiredCounted(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		t.Run(map[bool]string{false: "commit", true: "cancel"}[cancel], func(t *testing.T) {
			m := newMap(t, Config{CancelExpired: cancel, Charged: policy.AppendCharged})
			p := tokenP(100, 1, time.Hour)
			do := func(key string, op ReserveOp, id string, ttl time.Duration, now int64) ReserveResult {
				r := reserveOp(op, p, id, 10)
				r.TTL = ttl
				res, err := m.Reserve([]byte(key), policy.AppendLedgerKey(nil, []byte(key)), &r, now)
				require.NoError(t, err)
				return res
			}
			expired := func() int64 { return m.Stats().ReservationsExpired }
			require.True(t, do("k", ReserveNew, "r1", time.Second, t0).Decision.Allowed)
			require.True(t, do("k", ReserveNew, "r2", time.Second, t0).Decision.Allowed)
			require.True(t, do("k", ReserveNew, "r3", time.Hour, t0).Decision.Allowed)
			require.True(t, do("k", ReserveCommit, "r3", 0, t0).Done)
			assert.EqualValues(t, 0, expired(), "a commit is no expiry")
			require.True(t, do("k", ReserveNew, "r4", time.Hour, t0).Decision.Allowed)

			assert.False(t, do("k", ReserveCancel, "nope", 0, at(2*time.Second)).Done)
			assert.EqualValues(t, 2, expired(), "r1 and r2")
			assert.False(t, do("k", ReserveCommit, "r1", 0, at(3*time.Second)).Done)
			assert.EqualValues(t, 2, expired(), "once")
			assert.True(t, do("k", ReserveCommit, "r4", 0, at(3*time.Second)).Done)
			assert.False(t, do("k", ReserveCommit, "r4", 0, at(3*time.Second)).Done, "r4 is committed once")

			require.True(t, do("j", ReserveNew, "a", time.Second, t0).Decision.Allowed)
			require.True(t, do("j", ReserveNew, "b", time.Second, at(3*time.Second)).Decision.Allowed)
			assert.EqualValues(t, 3, expired(), "j's a")
			require.True(t, do("s", ReserveNew, "a", time.Second, t0).Decision.Allowed)
			m.Sweep(at(time.Minute), 1<<20)
			assert.EqualValues(t, 5, expired(), "the sweep: j's b, s's a")
			m.Sweep(at(2*time.Minute), 1<<20)
			assert.EqualValues(t, 5, expired())
		})
	}
}
