package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReserveMissKeepsLedger: an RL.COMMIT or RL.CANCEL of an id that is
// not outstanding, on a ledger holding expired reservations before live
// ones, leaves the live ones as they were. Take prunes the expired in
// place; the ledger was not written back when the id was missing, so its
// last words stayed behind as copies, and a live reservation committed
// (and gave its estimate back) twice.
func TestReserveMissKeepsLedger(t *testing.T) {
	m := newMap(t, Config{})
	p := tokenP(100, 1, time.Hour)
	key := []byte("k")
	ledger := policy.AppendLedgerKey(nil, key)
	do := func(op ReserveOp, id string, ttl time.Duration, now int64) ReserveResult {
		r := reserveOp(op, p, id, 10)
		r.TTL = ttl
		res, err := m.Reserve(key, ledger, &r, now)
		require.NoError(t, err)
		return res
	}
	require.True(t, do(ReserveNew, "old", time.Second, t0).Decision.Allowed)
	require.True(t, do(ReserveNew, "live", time.Hour, t0).Decision.Allowed)
	later := t0 + int64(time.Minute)
	assert.False(t, do(ReserveCancel, "nope", 0, later).Done)
	assert.True(t, do(ReserveCancel, "live", 0, later).Done)
	assert.False(t, do(ReserveCancel, "live", 0, later).Done, "cancelled once")
	d, err := m.Decide(key, p, later, 1, true)
	require.NoError(t, err)
	assert.EqualValues(t, 89, d.Remaining, "old's 10 stays charged (commit on expiry), live's came back once")
}
