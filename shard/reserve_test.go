package shard

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func reserveOp(op ReserveOp, p window.Params, id string, units int64) ReserveRequest {
	return ReserveRequest{Op: op, Params: p, ID: window.LeaseID([]byte(id)), TTL: time.Minute, Units: units}
}

func TestReserveCommitCancel(t *testing.T) {
	for _, p := range []window.Params{slideP(100, time.Minute), tokenP(100, 1, time.Hour),
		{Kind: window.KindFixed, Limit: 100, Period: time.Minute}} {
		t.Run(p.Kind.String(), func(t *testing.T) {
			m := newMap(t, Config{})
			key := []byte("llm:acme")
			ledger := policy.AppendLedgerKey(nil, key)
			left := func() int64 {
				d, err := m.Decide(key, p, t0, 1, true)
				require.NoError(t, err)
				if !d.Allowed {
					return 0
				}
				return d.Remaining + 1
			}
			do := func(r ReserveRequest) ReserveResult {
				res, err := m.Reserve(key, ledger, r, t0)
				require.NoError(t, err)
				return res
			}
			assert.True(t, do(reserveOp(ReserveNew, p, "r1", 40)).Decision.Allowed)
			assert.EqualValues(t, 60, left())
			again := do(reserveOp(ReserveNew, p, "r1", 40))
			assert.True(t, again.Done, "a retried reserve is a duplicate")
			assert.EqualValues(t, 60, left(), "and charges nothing")
			assert.True(t, do(reserveOp(ReserveNew, p, "r2", 50)).Decision.Allowed)
			assert.False(t, do(reserveOp(ReserveNew, p, "r3", 20)).Decision.Allowed, "estimates outstanding count")
			assert.True(t, do(reserveOp(ReserveCommit, p, "r1", 25)).Done)
			assert.EqualValues(t, 25, left(), "15 under the estimate came back")
			assert.False(t, do(reserveOp(ReserveCommit, p, "r1", 25)).Done, "a second commit changes nothing")
			assert.EqualValues(t, 25, left())
			assert.True(t, do(reserveOp(ReserveCancel, p, "r2", 0)).Done)
			assert.EqualValues(t, 75, left())
			assert.False(t, do(reserveOp(ReserveCancel, p, "r2", 0)).Done)
			assert.True(t, do(reserveOp(ReserveNew, p, "r4", 10)).Decision.Allowed)
			assert.True(t, do(reserveOp(ReserveCommit, p, "r4", 150)).Done, "over the estimate")
			assert.EqualValues(t, 0, left(), "the excess drove the key past its limit")
			assert.True(t, do(reserveOp(Refund, p, "", 500)).Done)
			assert.EqualValues(t, 100, left(), "a refund stops at full")
			_, ok := m.Get(ledger, t0)
			assert.False(t, ok, "an empty ledger is dropped")

			_, err := m.Reserve(key, ledger, reserveOp(ReserveNew, window.Params{Kind: window.KindLog, Limit: 5, Period: time.Second}, "x", 1), t0)
			assert.ErrorIs(t, err, ErrWrongType)
		})
	}
}

// TestReserveExpiryCommits: a reservation whose TTL ran out keeps its
// estimate charged, and a late commit or cancel changes nothing.
func TestReserveExpiryCommits(t *testing.T) {
	m := newMap(t, Config{})
	p := tokenP(100, 1, time.Hour)
	key := []byte("k")
	ledger := policy.AppendLedgerKey(nil, key)
	_, err := m.Reserve(key, ledger, reserveOp(ReserveNew, p, "r", 30), t0)
	require.NoError(t, err)
	later := t0 + int64(2*time.Minute)
	res, err := m.Reserve(key, ledger, reserveOp(ReserveCancel, p, "r", 0), later)
	require.NoError(t, err)
	assert.False(t, res.Done)
	d, _ := m.Decide(key, p, later, 71, true)
	assert.False(t, d.Allowed, "the estimate stays charged")
}

// TestHammerReservations: goroutines reserve, then commit at most their
// estimate or cancel, on one key: the admitted estimates outstanding plus
// the committed costs never pass the limit, and a duplicate never charges.
func TestHammerReservations(t *testing.T) {
	const goroutines, tries, limit = 12, 200, 1000
	m := newMap(t, Config{})
	p := window.Params{Kind: window.KindFixed, Limit: limit, Period: time.Hour}
	key := []byte("hot")
	ledger := policy.AppendLedgerKey(nil, key)
	var mu sync.Mutex
	var committed int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range tries {
				id := fmt.Sprint(g, "/", i)
				res, err := m.Reserve(key, ledger, reserveOp(ReserveNew, p, id, 5), t0)
				if !assert.NoError(t, err) || !res.Decision.Allowed {
					continue
				}
				if i%3 == 0 {
					r, _ := m.Reserve(key, ledger, reserveOp(ReserveCancel, p, id, 0), t0)
					assert.True(t, r.Done)
					continue
				}
				actual := int64(i % 6)
				r, _ := m.Reserve(key, ledger, reserveOp(ReserveCommit, p, id, actual), t0)
				assert.True(t, r.Done)
				r, _ = m.Reserve(key, ledger, reserveOp(ReserveCommit, p, id, actual), t0)
				assert.False(t, r.Done, "a duplicate commit")
				mu.Lock()
				committed += actual
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	info, ok := m.Get(key, t0)
	require.True(t, ok)
	assert.Equal(t, committed, info.Count, "every unit charged is a committed one")
	assert.LessOrEqual(t, info.Count, int64(limit))
}
