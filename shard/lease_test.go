package shard

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func acquire(limit int64, id string, ttl time.Duration) LeaseRequest {
	return LeaseRequest{Op: LeaseAcquire, Limit: limit, ID: window.LeaseID([]byte(id)), TTL: ttl, Cost: 1}
}

// TestHammerLeases has many goroutines acquire and release one key's
// leases: the holders at any moment never exceed the limit, every
// admitted lease's release finds it live, and the key is gone at the end.
func TestHammerLeases(t *testing.T) {
	const goroutines, tries, limit = 16, 300, 5
	m := newMap(t, Config{})
	var holders, admitted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range tries {
				id := fmt.Sprint(g, "/", i)
				r, err := m.Lease([]byte("hot"), acquire(limit, id, time.Hour), t0)
				if !assert.NoError(t, err) || !r.Allowed {
					continue
				}
				admitted.Add(1)
				assert.LessOrEqual(t, holders.Add(1), int64(limit), "holders over the limit")
				assert.LessOrEqual(t, r.InFlight, int64(limit))
				holders.Add(-1)
				rel := LeaseRequest{Op: LeaseRelease, ID: window.LeaseID([]byte(id))}
				r, err = m.Lease([]byte("hot"), rel, t0)
				assert.NoError(t, err)
				assert.True(t, r.Allowed, "Release(%s) of a lease it holds = 0, want 1", id)
			}
		})
	}
	close(start)
	wg.Wait()
	assert.Positive(t, admitted.Load())
	info, ok := m.Get([]byte("hot"), t0)
	assert.False(t, ok && info.Expiry > t0, "a key with no leases left is gone")
	m.Sweep(t0, 1<<20)
	assert.Zero(t, m.Len(), "and the sweep frees its slot")
}

func TestLeaseStore(t *testing.T) {
	m := newMap(t, Config{})
	k := []byte("pool")
	for i := range 3 {
		r, err := m.Lease(k, acquire(3, fmt.Sprint(i), time.Duration(i+1)*time.Second), t0)
		require.NoError(t, err)
		require.True(t, r.Allowed)
		assert.EqualValues(t, i+1, r.InFlight)
	}
	r, err := m.Lease(k, acquire(3, "x", time.Second), t0)
	require.NoError(t, err)
	assert.False(t, r.Allowed, "a fourth lease under limit 3")
	assert.Equal(t, time.Second, r.Wait)
	info, ok := m.Get(k, t0)
	require.True(t, ok)
	assert.Equal(t, window.KindLease, info.Params.Kind)
	assert.EqualValues(t, 3, info.Count)
	assert.Equal(t, t0+int64(3*time.Second), info.Expiry)

	_, err = m.Decide([]byte("pool"), window.Params{Kind: window.KindFixed, Limit: 1, Period: time.Second}, t0, 1, false)
	assert.ErrorIs(t, err, ErrWrongType)
	_, err = m.Decide([]byte("fx"), window.Params{Kind: window.KindFixed, Limit: 1, Period: time.Second}, t0, 1, false)
	require.NoError(t, err)
	_, err = m.Lease([]byte("fx"), acquire(3, "a", time.Second), t0)
	assert.ErrorIs(t, err, ErrWrongType)

	// Renew and release of a lease that ended, and of one never taken.
	later := t0 + int64(1500*time.Millisecond)
	r, err = m.Lease(k, LeaseRequest{Op: LeaseRenew, ID: window.LeaseID([]byte("0")), TTL: time.Second}, later)
	require.NoError(t, err)
	assert.False(t, r.Allowed)
	r, _ = m.Lease(k, LeaseRequest{Op: LeaseRelease, ID: window.LeaseID([]byte("nope"))}, later)
	assert.False(t, r.Allowed)
	r, _ = m.Lease(k, LeaseRequest{Op: LeaseRenew, ID: window.LeaseID([]byte("1")), TTL: time.Hour}, later)
	assert.True(t, r.Allowed)
	assert.EqualValues(t, 2, r.InFlight)

	// Export and import keep the leases.
	es := m.ExportShard(int(m.hash(k)&m.mask), nil)
	var e Entry
	for _, x := range es {
		if string(x.Key) == "pool" {
			e = x
		}
	}
	require.Equal(t, window.KindLease, e.Params.Kind)
	m2 := newMap(t, Config{})
	require.NoError(t, m2.Import(e, later))
	r, _ = m2.Lease(k, LeaseRequest{Op: LeaseRelease, ID: window.LeaseID([]byte("1"))}, later)
	assert.True(t, r.Allowed, "an imported lease is live")
	r, _ = m2.Lease(k, LeaseRequest{Op: LeaseRelease, ID: window.LeaseID([]byte("2"))}, later)
	assert.True(t, r.Allowed)
	m2.Sweep(later, 1<<20)
	assert.Zero(t, m2.Len())

	for _, bad := range []LeaseRequest{
		{Op: LeaseAcquire, Limit: 0, Cost: 1, TTL: time.Second},
		{Op: LeaseAcquire, Limit: 1, Cost: 0, TTL: time.Second},
		{Op: LeaseAcquire, Limit: 1, Cost: 1, TTL: 0},
		{Op: LeaseRenew, TTL: window.MaxLeaseTTL + 1},
	} {
		_, err := m.Lease(k, bad, t0)
		assert.Error(t, err, "%+v", bad)
	}
}

// TestLeaseGrowsAndShrinks takes and gives back many leases: storage moves
// to blocks and back inline, and the bytes come back.
func TestLeaseGrowsAndShrinks(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	k := []byte("big")
	base := m.Stats().Bytes
	for i := range window.MaxLeases {
		r, err := m.Lease(k, acquire(window.MaxLeases, fmt.Sprint(i), time.Hour), t0)
		require.NoError(t, err)
		require.True(t, r.Allowed, "lease %d", i)
	}
	r, _ := m.Lease(k, acquire(window.MaxLeaseCost, "over", time.Hour), t0)
	assert.False(t, r.Allowed, "lease past MaxLeases")
	full, _ := m.MemoryUsage(k)
	t.Logf("%d leases: MEMORY USAGE %d B, %.1f B a lease", window.MaxLeases, full, float64(full)/window.MaxLeases)
	for i := range window.MaxLeases {
		r, _ := m.Lease(k, LeaseRequest{Op: LeaseRelease, ID: window.LeaseID(fmt.Append(nil, i))}, t0)
		require.True(t, r.Allowed, "release %d", i)
	}
	m.Sweep(t0, 1<<20)
	assert.Zero(t, m.Len())
	assert.LessOrEqual(t, m.Stats().Bytes-base, int64(128<<10), "pages kept for reuse only")
}
