package shard

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everyKind holds one short-lived parameter set per algorithm: each expires
// within 2 s of one admitted request at t0.
var everyKind = []window.Params{
	slideP(5, time.Second), tokenP(5, 5, time.Second), fixedP(5, time.Second),
	logP(5, time.Second), leakyP(5, 5, time.Second),
}

// TestExpiredKeyIsAbsentForEveryKind checks that a key whose state has
// expired, but that Sweep has not freed, is absent for every command: any
// algorithm may take it over, and it answers as a new key would.
func TestExpiredKeyIsAbsentForEveryKind(t *testing.T) {
	for _, a := range everyKind {
		for _, b := range everyKind {
			t.Run(a.Kind.String()+"/"+b.Kind.String(), func(t *testing.T) {
				m := newMap(t, Config{})
				_, err := m.Decide([]byte("k"), a, t0, 5, false)
				require.NoError(t, err)
				inf, ok := m.Get([]byte("k"), t0)
				require.True(t, ok)
				now := inf.Expiry + int64(300*time.Millisecond) // expired, within the grace
				want, err := newMap(t, Config{}).Decide([]byte("k"), b, now, 2, false)
				require.NoError(t, err)

				for _, peek := range []bool{true, false} {
					got, err := m.Decide([]byte("k"), b, now, 2, peek)
					require.NoErrorf(t, err, "%v over expired %v, peek %v", b.Kind, a.Kind, peek)
					assert.Equalf(t, want, got, "%v over expired %v, peek %v", b.Kind, a.Kind, peek)
				}
				inf, ok = m.Get([]byte("k"), now)
				require.True(t, ok)
				assert.Equal(t, b, inf.Params, "the key now holds the new algorithm")
				assert.EqualValues(t, 1, m.Len())
				checkInvariants(t, m)
			})
		}
	}
}

// TestExpiredKeyIsAbsentForThrottle checks CL.THROTTLE over an expired key of every kind.
func TestExpiredKeyIsAbsentForThrottle(t *testing.T) {
	p := window.Throttle{MaxBurst: 4, Count: 5, Period: 1}
	for _, a := range everyKind {
		t.Run(a.Kind.String(), func(t *testing.T) {
			m := newMap(t, Config{})
			_, err := m.Decide([]byte("k"), a, t0, 5, false)
			require.NoError(t, err)
			inf, _ := m.Get([]byte("k"), t0)
			now := inf.Expiry + int64(300*time.Millisecond)
			want, err := newMap(t, Config{}).Throttle([]byte("k"), p, now, 2)
			require.NoError(t, err)
			got, err := m.Throttle([]byte("k"), p, now, 2)
			require.NoErrorf(t, err, "CL.THROTTLE over expired %v", a.Kind)
			assert.Equal(t, want, got)
			inf, ok := m.Get([]byte("k"), now)
			require.True(t, ok)
			assert.Equal(t, window.KindToken, inf.Params.Kind)
			checkInvariants(t, m)
		})
	}
}

// TestExpiredKeyDeniedOrPeekedStaysForSweep checks that a request that would
// not create a new key leaves an expired key as it is, for Sweep to free.
func TestExpiredKeyDeniedOrPeekedStaysForSweep(t *testing.T) {
	m := newMap(t, Config{})
	_, err := m.Decide([]byte("k"), slideP(5, time.Second), t0, 5, false)
	require.NoError(t, err)
	now := t0 + int64(1300*time.Millisecond)
	d, err := m.Decide([]byte("k"), tokenP(5, 5, time.Second), now, 6, false)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	inf, ok := m.Get([]byte("k"), now)
	require.True(t, ok)
	assert.Equal(t, window.KindSlide, inf.Params.Kind, "a denial changes nothing")
	assert.Equal(t, 1, m.Sweep(now+int64(DefaultGrace)+1, 1<<20))
}

// TestExpiredKeyCountsAgainstMaxKeys pins the documented choice: an expired
// key counts against MaxKeys until Sweep frees it, but the key itself can
// always come back, since it needs no new slot.
func TestExpiredKeyCountsAgainstMaxKeys(t *testing.T) {
	m := newMap(t, Config{MaxKeys: 1})
	_, err := m.Decide([]byte("a"), slideP(5, time.Second), t0, 1, false)
	require.NoError(t, err)
	now := t0 + int64(1300*time.Millisecond)
	_, err = m.Decide([]byte("b"), slideP(5, time.Second), now, 1, false)
	assert.ErrorIs(t, err, ErrFull, "an expired key still holds its place until swept")
	_, err = m.Decide([]byte("a"), tokenP(5, 5, time.Second), now, 1, false)
	assert.NoError(t, err, "the expired key itself comes back")
	m.Sweep(now+int64(10*time.Second), 1<<20)
	_, err = m.Decide([]byte("b"), slideP(5, time.Second), now+int64(10*time.Second), 1, false)
	assert.NoError(t, err, "once swept, its place is free")
}
