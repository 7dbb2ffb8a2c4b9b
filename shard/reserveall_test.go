package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// policyFixture is a policy of two rules for key "k" as a server keeps it:
// each rule's internal key and the policy's ledger.
func policyFixture() (*Multi, []byte) {
	p := &policy.Policy{Name: "llm", Rules: []window.Params{tokenP(100, 1, time.Hour),
		{Kind: window.KindFixed, Limit: 150, Period: time.Hour}}}
	key := []byte("k")
	q := &Multi{Params: p.Rules}
	for i := range p.Rules {
		q.Keys = append(q.Keys, p.AppendRuleKey(nil, i, key))
	}
	return q, p.AppendLedgerKey(nil, key)
}

// leftAll returns what each rule of q has left at now.
func leftAll(t *testing.T, m *Map, q *Multi, now int64) [2]int64 {
	t.Helper()
	ds, _, err := m.DecideAll([]byte("k"), q, now, 1, true, nil)
	require.NoError(t, err)
	return [2]int64{ds[0].Remaining + 1, ds[1].Remaining + 1}
}

// TestReserveAllExpiryCancels: with CancelExpired a policy's expired
// reservation gives its estimate back to every rule, once: by Sweep, which
// finds the rules' keys with Config.Charged, or before the ledger's next
// reservation; without it, the estimate stays charged (the default).
func TestReserveAllExpiryCancels(t *testing.T) {
	for _, cancel := range []bool{true, false} {
		t.Run(map[bool]string{true: "cancel", false: "commit"}[cancel], func(t *testing.T) {
			m := newMap(t, Config{CancelExpired: cancel, Charged: policy.AppendCharged})
			q, ledger := policyFixture()
			reserve := func(id string, units int64, ttl time.Duration, now int64) {
				t.Helper()
				r := reserveOp(ReserveNew, window.Params{}, id, units)
				r.TTL = ttl
				_, _, res, err := m.ReserveAll([]byte("k"), ledger, q, r, now, nil)
				require.NoError(t, err)
				require.False(t, res.Done, "%s is new", id)
			}
			at := func(d time.Duration) int64 { return t0 + int64(d) }
			reserve("r1", 30, time.Minute, t0)
			reserve("r2", 20, 5*time.Minute, t0)
			require.Equal(t, [2]int64{50, 100}, leftAll(t, m, q, t0))
			m.Sweep(at(2*time.Minute), 1<<20)
			m.Sweep(at(2*time.Minute), 1<<20)
			if !cancel {
				assert.Equal(t, [2]int64{50, 100}, leftAll(t, m, q, at(2*time.Minute)), "commit: r1's 30 stays charged")
				return
			}
			assert.Equal(t, [2]int64{80, 130}, leftAll(t, m, q, at(2*time.Minute)), "Sweep gave r1's 30 back to both rules, once")
			_, _, res, err := m.ReserveAll([]byte("k"), ledger, q, reserveOp(ReserveCancel, window.Params{}, "r1", 0), at(2*time.Minute), nil)
			require.NoError(t, err)
			assert.False(t, res.Done, "an expired reservation is not outstanding")

			reserve("r3", 90, time.Minute, at(10*time.Minute)) // r2 expired unswept: settled first, or r3 would not fit
			assert.Equal(t, [2]int64{10, 60}, leftAll(t, m, q, at(10*time.Minute)), "r2's 20 came back, r3 holds 90")
			m.Sweep(at(30*time.Minute), 1<<20)
			assert.Equal(t, [2]int64{100, 150}, leftAll(t, m, q, at(30*time.Minute)), "r3's 90 came back")
			_, ok := m.Lookup(ledger, []byte("k"))
			assert.False(t, ok, "the ledger goes once its last reservation is settled")
		})
	}
}

// TestReserveAllExpiryCancelTravels: a policy's unsettled ledger that
// travels (export and import) is settled where it lands, to every rule.
func TestReserveAllExpiryCancelTravels(t *testing.T) {
	from := newMap(t, Config{CancelExpired: true, Charged: policy.AppendCharged})
	q, ledger := policyFixture()
	_, _, _, err := from.ReserveAll([]byte("k"), ledger, q, reserveOp(ReserveNew, window.Params{}, "r1", 30), t0, nil)
	require.NoError(t, err)
	later := t0 + int64(2*time.Minute)
	to := newMap(t, Config{CancelExpired: true, Charged: policy.AppendCharged})
	for _, e := range exportAll(from) {
		e.Route = policy.Route(e.Key)
		require.NoError(t, to.Import(e, later))
	}
	require.EqualValues(t, 3, to.Len(), "two rules and the unsettled ledger")
	to.Sweep(later, 1<<20)
	assert.EqualValues(t, 2, to.Len(), "settled, the ledger goes")
	assert.Equal(t, [2]int64{100, 150}, leftAll(t, to, q, later))
}
