package shard

import (
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
)

// BenchmarkLeaseChurn takes and releases one lease at a time over many
// keys, as leasepairs does, so each pair makes its key and drops it;
// reserve pairs make and settle a ledger the same way.
func BenchmarkLeaseChurn(b *testing.B) {
	const nkeys = 10000
	keys := make([][]byte, nkeys)
	ledgers := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = []byte("lp:" + strconv.Itoa(i))
		ledgers[i] = policy.AppendLedgerKey(nil, keys[i])
	}
	id := window.LeaseID([]byte("7-1"))
	b.Run("lease", func(b *testing.B) {
		m := newMap(b, Config{})
		acq := LeaseRequest{Op: LeaseAcquire, Limit: 100, ID: id, TTL: 30 * time.Second, Cost: 1}
		rel := LeaseRequest{Op: LeaseRelease, ID: id}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := keys[i%nkeys]
			_, _ = m.Lease(k, acq, t0)
			_, _ = m.Lease(k, rel, t0)
			i++
		}
	})
	b.Run("reserve", func(b *testing.B) {
		m := newMap(b, Config{})
		p := tokenP(100000, 100000, time.Minute)
		res := ReserveRequest{Op: ReserveNew, Params: p, ID: id, TTL: 30 * time.Second, Units: 10}
		com := ReserveRequest{Op: ReserveCommit, ID: id, Units: 7}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_, _ = m.Reserve(keys[i%nkeys], ledgers[i%nkeys], &res, t0)
			_, _ = m.Reserve(keys[i%nkeys], ledgers[i%nkeys], &com, t0)
			i++
		}
	})
}
