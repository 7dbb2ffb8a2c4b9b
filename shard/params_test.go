package shard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParamsIdle: parameters whose last user goes stay interned, so a key
// that comes and goes keeps its id; past maxIdleParams idle entries they
// all go, so many distinct parameters that come and go stay bounded.
func TestParamsIdle(t *testing.T) {
	var ps params
	p := slideP(10, time.Minute)
	id := ps.acquire(p)
	for range 1000 { // a lease key taken and released, over and over
		ps.release(id)
		require.Equal(t, id, ps.acquire(p), "the same id")
	}
	assert.Equal(t, 1, ps.live())
	assert.Len(t, ps.ids, 1)

	for i := range 1000 { // as many distinct limits, each used once
		ps.release(ps.acquire(slideP(int64(100+i), time.Minute)))
		require.LessOrEqual(t, ps.idleCount(), maxIdleParams, "limit %d", i)
	}
	assert.Equal(t, 1, ps.live())
	assert.LessOrEqual(t, len(ps.list), 2+maxIdleParams+1, "ids are reused")
	ps.release(id)
	for i := range maxIdleParams + 1 {
		ps.release(ps.acquire(slideP(int64(5000+i), time.Minute)))
	}
	assert.Zero(t, ps.live())
	other := ps.acquire(slideP(7, time.Minute))
	assert.Equal(t, slideP(7, time.Minute), ps.get(other))
}

// TestParamsHotStays: an entry that goes idle and comes back between every
// other entry's keys stays interned: only distinct entries count toward
// the bound.
func TestParamsHotStays(t *testing.T) {
	var ps params
	hot := slideP(10, time.Minute)
	id := ps.acquire(hot)
	for range 10 * maxIdleParams {
		ps.release(id)
		require.Equal(t, id, ps.acquire(hot))
	}
	ps.release(id)
	for i := range maxIdleParams - 1 {
		ps.release(ps.acquire(slideP(int64(100+i), time.Minute)))
	}
	_, ok := ps.ids[hot]
	assert.True(t, ok, "still interned")
}
