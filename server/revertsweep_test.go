package server

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sweepingDurability is a log whose commits, once fail is set, fail after
// the store's sweep has run: the sweep frees what a write left restricting
// nothing between the write and the taking back of its change.
type sweepingDurability struct {
	*persistence.Store
	m    *shard.Map
	fail atomic.Bool
}

func (d *sweepingDurability) Commit() error {
	if !d.fail.Load() {
		return d.Store.Commit()
	}
	d.m.Sweep(time.Now().UnixNano(), 1<<20)
	return syscall.EIO
}

// TestRefusedWriteTakenBackAfterASweep: a write that empties its keys (a
// reservation cancelled, a lease released) leaves entries that restrict
// nothing, which the background sweep may free, without the key locks,
// before the failed commit takes the change back. Its client is told
// MISCONF, so every key must hold what it held before all the same.
func TestRefusedWriteTakenBackAfterASweep(t *testing.T) {
	ledger := string(policy.AppendLedgerKey(nil, []byte("r")))
	for _, tc := range []struct {
		name         string
		setup, write []any
		keys         []string // routed by the first
	}{
		{"cancel", []any{"RL.RESERVE", "r", "SLIDE", 10, 60, "COST", 3, "TTL", 60, "ID", "a"}, []any{"RL.CANCEL", "r", "a"}, []string{"r", ledger}},
		{"release", []any{"RL.ACQUIRE", "l", 5, 60, "ID", "x"}, []any{"RL.RELEASE", "l", "x"}, []string{"l"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := shard.New(shard.Config{Shards: 16})
			require.NoError(t, err)
			st, _, err := persistence.Open(t.TempDir(), m, persistence.Options{Fsync: persistence.FsyncAlways, SnapshotInterval: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			d := &sweepingDurability{Store: st, m: m}
			_, addr := startServer(t, Config{Store: m, Durability: d})
			ctx := ctxT(t)
			c := newClient(t, addr, 3)
			require.NoError(t, c.Do(ctx, tc.setup...).Err())
			route := []byte(tc.keys[0])
			before := make([]keyState, len(tc.keys))
			for i, k := range tc.keys {
				before[i].e, before[i].ok = m.Lookup([]byte(k), route)
				require.True(t, before[i].ok, "%q holds the setup's state", k)
			}

			d.fail.Store(true)
			assert.EqualError(t, c.Do(ctx, tc.write...).Err(), "MISCONF Errors writing to the AOF file: Input/output error")
			for i, k := range tc.keys {
				e, ok := m.Lookup([]byte(k), route)
				after := keyState{e, ok}
				assert.True(t, shard.SameEntry(before[i].ptr(), after.ptr()), "%q: the refused write's change was taken back, though the sweep freed what it left", k)
			}
		})
	}
}
