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
				res, err := m.Reserve(key, ledger, &r, t0)
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
			assert.True(t, ledgerLive(m, key, ledger, t0), "r4 is outstanding in the ledger")
			assert.True(t, do(reserveOp(ReserveCommit, p, "r4", 150)).Done, "over the estimate")
			assert.EqualValues(t, 0, left(), "the excess drove the key past its limit")
			assert.True(t, do(reserveOp(Refund, p, "", 500)).Done)
			assert.EqualValues(t, 100, left(), "a refund stops at full")
			assert.False(t, ledgerLive(m, key, ledger, t0), "a ledger with nothing outstanding is gone")

			_, err := m.Reserve(key, ledger, ref(reserveOp(ReserveNew, window.Params{Kind: window.KindLog, Limit: 5, Period: time.Second}, "x", 1)), t0)
			assert.ErrorIs(t, err, ErrWrongType)
		})
	}
}

// ledgerLive reports whether ledger, key's ledger, is live in key's shard,
// where ledgers live: Map.Get would look for it in a shard of its own hash.
func ledgerLive(m *Map, key, ledger []byte, now int64) bool {
	s := m.shardFor(m.hash(key))
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(ledger, m.hash(ledger))
	return ok && !s.expiredLocked(s.slots.at(i), now)
}

// TestReserveExpiryCommits: a reservation whose TTL ran out keeps its
// estimate charged, and a late commit or cancel changes nothing.
func TestReserveExpiryCommits(t *testing.T) {
	m := newMap(t, Config{})
	p := tokenP(100, 1, time.Hour)
	key := []byte("k")
	ledger := policy.AppendLedgerKey(nil, key)
	_, err := m.Reserve(key, ledger, ref(reserveOp(ReserveNew, p, "r", 30)), t0)
	require.NoError(t, err)
	later := t0 + int64(2*time.Minute)
	res, err := m.Reserve(key, ledger, ref(reserveOp(ReserveCancel, p, "r", 0)), later)
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
				res, err := m.Reserve(key, ledger, ref(reserveOp(ReserveNew, p, id, 5)), t0)
				if !assert.NoError(t, err) || !res.Decision.Allowed {
					continue
				}
				if i%3 == 0 {
					r, _ := m.Reserve(key, ledger, ref(reserveOp(ReserveCancel, p, id, 0)), t0)
					assert.True(t, r.Done)
					continue
				}
				actual := int64(i % 6)
				r, _ := m.Reserve(key, ledger, ref(reserveOp(ReserveCommit, p, id, actual)), t0)
				assert.True(t, r.Done)
				r, _ = m.Reserve(key, ledger, ref(reserveOp(ReserveCommit, p, id, actual)), t0)
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

// TestReserveExpiryCancels: with CancelExpired an expired reservation's
// estimate comes back to its key, by Sweep or before the key's next
// reservation command, once; until then it stays charged. The ledger
// outlives its expired reservations until they are settled, and then goes.
func TestReserveExpiryCancels(t *testing.T) {
	m := newMap(t, Config{CancelExpired: true, Charged: policy.AppendCharged})
	p := tokenP(100, 1, time.Hour)
	key := []byte("k")
	ledger := policy.AppendLedgerKey(nil, key)
	left := func(now int64) int64 {
		d, err := m.Decide(key, p, now, 1, true)
		require.NoError(t, err)
		return d.Remaining + 1
	}
	reserve := func(id string, units int64, ttl time.Duration, now int64) ReserveResult {
		r := reserveOp(ReserveNew, p, id, units)
		r.TTL = ttl
		res, err := m.Reserve(key, ledger, &r, now)
		require.NoError(t, err)
		return res
	}
	require.True(t, reserve("r1", 30, time.Minute, t0).Decision.Allowed)
	require.True(t, reserve("r2", 20, 5*time.Minute, t0).Decision.Allowed)
	at := func(d time.Duration) int64 { return t0 + int64(d) }

	assert.EqualValues(t, 50, left(at(2*time.Minute)), "r1 expired, its estimate still charged until settled")
	m.Sweep(at(2*time.Minute), 1<<20)
	assert.EqualValues(t, 80, left(at(2*time.Minute)), "Sweep gave r1's 30 back")
	m.Sweep(at(2*time.Minute), 1<<20)
	assert.EqualValues(t, 80, left(at(2*time.Minute)), "once")
	res, err := m.Reserve(key, ledger, ref(reserveOp(ReserveCancel, p, "r1", 0)), at(2*time.Minute))
	require.NoError(t, err)
	assert.False(t, res.Done, "an expired reservation is not outstanding")
	assert.EqualValues(t, 2, m.Len(), "the key and its ledger, with r2")

	assert.True(t, reserve("r3", 100, time.Minute, at(10*time.Minute)).Decision.Allowed,
		"r2's 20 came back before the reservation was decided")
	d, _ := m.Decide(key, p, at(10*time.Minute), 1, true)
	assert.False(t, d.Allowed, "r3 holds all 100")
	m.Sweep(at(time.Hour), 1<<20)
	assert.EqualValues(t, 1, m.Len(), "the ledger goes once its last reservation is settled")
	assert.EqualValues(t, 100, left(at(time.Hour)), "r3's 100 came back")
	m.Sweep(at(30*time.Minute), 1<<20) // the clock steps back
	assert.EqualValues(t, 100, left(at(time.Hour)))
}

// TestReserveExpiryModeFollowsLatest: a key's latest reservation puts its
// ledger in the Map's mode: a ledger made under commit that a Map with
// CancelExpired reserves on gives back the estimates that expire after.
func TestReserveExpiryModeFollowsLatest(t *testing.T) {
	commit := newMap(t, Config{})
	p := tokenP(100, 1, time.Hour)
	key := []byte("k")
	ledger := policy.AppendLedgerKey(nil, key)
	_, err := commit.Reserve(key, ledger, ref(reserveOp(ReserveNew, p, "r1", 30)), t0)
	require.NoError(t, err)
	cancel := newMap(t, Config{CancelExpired: true, Charged: policy.AppendCharged})
	for _, e := range exportAll(commit) {
		e.Route = policy.Route(e.Key)
		require.NoError(t, cancel.Import(e, t0))
	}
	later := t0 + int64(2*time.Minute)
	cancel.Sweep(later, 1<<20)
	d, _ := cancel.Decide(key, p, later, 71, true)
	assert.False(t, d.Allowed, "r1 was made under commit: it stays charged")
	_, err = cancel.Reserve(key, ledger, ref(reserveOp(ReserveNew, p, "r2", 20)), later)
	require.NoError(t, err)
	cancel.Sweep(later+int64(2*time.Minute), 1<<20)
	d, _ = cancel.Decide(key, p, later+int64(2*time.Minute), 51, true)
	assert.True(t, d.Allowed, "r2 was made under cancel: its 20 came back")
}

// TestReserveExpiryCancelTravels: a ledger whose reservations all expired
// before it was settled still travels (export and import, as snapshots,
// replicas and handoff move keys), and the Map it lands in gives the
// estimate back.
func TestReserveExpiryCancelTravels(t *testing.T) {
	from := newMap(t, Config{CancelExpired: true, Charged: policy.AppendCharged})
	p := tokenP(100, 1, time.Hour)
	key := []byte("k")
	_, err := from.Reserve(key, policy.AppendLedgerKey(nil, key), ref(reserveOp(ReserveNew, p, "r1", 30)), t0)
	require.NoError(t, err)
	later := t0 + int64(2*time.Minute) // r1 expired a minute ago, unsettled
	to := newMap(t, Config{CancelExpired: true, Charged: policy.AppendCharged})
	for _, e := range exportAll(from) {
		e.Route = policy.Route(e.Key)
		require.NoError(t, to.Import(e, later))
	}
	require.EqualValues(t, 2, to.Len(), "the key and its unsettled ledger")
	to.Sweep(later, 1<<20)
	assert.EqualValues(t, 1, to.Len(), "settled, the ledger goes")
	d, _ := to.Decide(key, p, later, 100, true)
	assert.True(t, d.Allowed, "r1's 30 came back")
}

// TestReserveWidensNarrowLedger: a ledger written before estimates grew
// (narrow, as a snapshot of then holds it) keeps its reservation when a new
// one, above 2^20, widens it; both commit with their own estimates.
func TestReserveWidensNarrowLedger(t *testing.T) {
	m := newMap(t, Config{})
	p := window.Params{Kind: window.KindFixed, Limit: 1 << 40, Period: time.Hour}
	key := []byte("up")
	ledger := policy.AppendLedgerKey(nil, key)
	_, err := m.Reserve(key, ledger, ref(reserveOp(ReserveNew, p, "old", 700)), t0)
	require.NoError(t, err)
	narrow := window.Reservations{}.Add(make([]uint64, 0, 2), t0, window.LeaseID([]byte("old")), time.Minute, 700)
	require.NoError(t, m.Import(Entry{Key: ledger, Route: key, Params: window.Params{Kind: window.KindReserve}, Counters: narrow}, t0))

	res, err := m.Reserve(key, ledger, ref(reserveOp(ReserveNew, p, "big", 5_000_000_000)), t0)
	require.NoError(t, err)
	require.True(t, res.Decision.Allowed)
	e, ok := m.Lookup(ledger, key)
	require.True(t, ok)
	assert.Equal(t, window.LedgerParams(false), e.Params, "widened")
	for _, c := range []struct {
		id     string
		actual int64
	}{{"old", 100}, {"big", 4_000_000_000}} {
		res, err = m.Reserve(key, ledger, ref(reserveOp(ReserveCommit, p, c.id, c.actual)), t0)
		require.NoError(t, err)
		assert.True(t, res.Done, c.id)
	}
	info, ok := m.Get(key, t0)
	require.True(t, ok)
	assert.EqualValues(t, 4_000_000_100, info.Count, "each estimate replaced by its actual cost")
}

// ref returns a pointer to a copy of v: Reserve takes its request by
// pointer.
func ref[T any](v T) *T { return &v }
