package persistence

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func leaseReq(limit int64, id string) shard.LeaseRequest {
	return shard.LeaseRequest{Op: shard.LeaseAcquire, Limit: limit, ID: window.LeaseID([]byte(id)), TTL: time.Hour, Cost: 1}
}

// TestLeasesRoundTrip: leases come back through a snapshot and through the
// log, one lease a key (inline) and many (in a block), with their ids: a
// release after the reload finds them live, and a released lease stays gone.
func TestLeasesRoundTrip(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	hold := func(prefix string) {
		for n := range []int{1, 7} {
			key := fmt.Appendf(nil, "%s:%d", prefix, n)
			for i := range 1 + 6*n {
				r, err := st.m.Lease(key, leaseReq(10, fmt.Sprint(i)), c.nano()+int64(i))
				require.NoError(t, err)
				require.True(t, r.Allowed)
			}
		}
	}
	hold("snap")
	require.NoError(t, st.Snapshot())
	hold("log")
	r, err := st.m.Lease([]byte("log:1"), shard.LeaseRequest{Op: shard.LeaseRelease, ID: window.LeaseID([]byte("3"))}, c.nano())
	require.NoError(t, err)
	require.True(t, r.Allowed)
	flushLog(t, st)
	want := liveAt(m, c.nano())
	require.Len(t, want, 4)
	require.NoError(t, st.Close())

	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
	assert.Positive(t, rec.Records)
	release := func(key, id string) bool {
		r, err := m2.Lease([]byte(key), shard.LeaseRequest{Op: shard.LeaseRelease, ID: window.LeaseID([]byte(id))}, c.nano())
		require.NoError(t, err)
		return r.Allowed
	}
	assert.True(t, release("snap:0", "0"))
	assert.True(t, release("log:1", "6"))
	assert.False(t, release("log:1", "3"), "a lease released before the reload")
}

// TestLeasesTornTail: a torn last record holding a lease is cut off; the
// leases before it load.
func TestLeasesTornTail(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	for i := range 20 {
		_, err := st.m.Lease(fmt.Appendf(nil, "k%d", i), leaseReq(3, "a"), c.nano())
		require.NoError(t, err)
	}
	flushLog(t, st)
	want := liveAt(m, c.nano())
	_, err := st.m.Lease([]byte("lost"), leaseReq(3, "a"), c.nano())
	require.NoError(t, err)
	require.NoError(t, st.Close())

	segs := files(t, dir, "log-*.rla")
	last := segs[len(segs)-1]
	info, err := os.Stat(last)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(last, info.Size()-3))
	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	require.Len(t, rec.Warnings, 1)
	assert.Equal(t, want, exportAll(m2))
	_, ok := m2.Get([]byte("lost"), c.nano())
	assert.False(t, ok)
}

// TestLeasePairsCutShort: every prefix of an encoded lease entry is refused,
// never read as other leases.
func TestLeasePairsCutShort(t *testing.T) {
	b := []uint64{5 << 20, window.LeaseID([]byte("a")), 9<<20 | 3, window.LeaseID([]byte("b"))}
	enc := appendCounters(nil, window.KindLease, b, 0)
	for n := range len(enc) {
		eb := entryBlock{d: decoder{b: enc[:n]}}
		cnt := eb.d.uvarint()
		if eb.d.bad {
			continue
		}
		var e shard.Entry
		assert.NotEmpty(t, eb.pairs(&e, cnt), "prefix of %d bytes", n)
	}
	eb := entryBlock{d: decoder{b: enc}}
	var e shard.Entry
	require.Empty(t, eb.pairs(&e, eb.d.uvarint()))
	assert.Equal(t, b, e.Counters)
}

// TestReservationsRoundTrip: a reservation's ledger comes back from the log
// in its key's shard, so a commit after the reload finds it.
func TestReservationsRoundTrip(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, _, _ := openStore(t, dir, c.opts(FsyncEverysec))
	p := window.Params{Kind: window.KindFixed, Limit: 100, Period: time.Hour}
	for i := range 20 {
		key := fmt.Appendf(nil, "budget:%d", i)
		r := shard.ReserveRequest{Op: shard.ReserveNew, Params: p, ID: window.LeaseID([]byte("r")), TTL: time.Hour, Units: 40}
		res, err := st.m.Reserve(key, policy.AppendLedgerKey(nil, key), &r, c.nano())
		require.NoError(t, err)
		require.True(t, res.Decision.Allowed)
	}
	flushLog(t, st)
	require.NoError(t, st.Close())
	st2, m2, _ := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	for i := range 20 {
		key := fmt.Appendf(nil, "budget:%d", i)
		r := shard.ReserveRequest{Op: shard.ReserveCommit, ID: window.LeaseID([]byte("r")), Units: 10}
		res, err := m2.Reserve(key, policy.AppendLedgerKey(nil, key), &r, c.nano())
		require.NoError(t, err)
		assert.True(t, res.Done, "%s: the reservation came back", key)
		info, ok := m2.Get(key, c.nano())
		require.True(t, ok)
		assert.EqualValues(t, 10, info.Count, "%s: the actual cost replaced the estimate", key)
	}
}
