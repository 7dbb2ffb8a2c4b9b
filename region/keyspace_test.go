package region

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// TestOwnIsTheKeyStoresState checks that a global key's copy in the key
// store is the state window would keep for the same admissions: the
// keyspace shows the region's own units as a local key's.
func TestOwnIsTheKeyStoresState(t *testing.T) {
	for _, lim := range []Limit{
		{Kind: window.KindFixed, Limit: 1000, Window: 10 * time.Second},
		{Kind: window.KindSlide, Limit: 1000, Window: 10 * time.Second},
		{Kind: window.KindSlide, Limit: 1000, Window: 3 * time.Hour}, // coarse counters
	} {
		st := newStores(t, 2, 1, 1)
		p := window.Params{Kind: lim.Kind, Limit: lim.Limit, Period: lim.Window}
		var ws window.State
		wb := make([]uint64, 0, 8)
		for i, at := range []time.Duration{0, 300 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 9 * time.Second, 12 * time.Second} {
			now := t0 + int64(at)
			d := st[0].Decide([]byte("k"), lim, now, int64(i+1), false)
			require.True(t, d.Allowed)
			var wd window.Decision
			wd, wb = p.Decide(&ws, wb, now, int64(i+1), false)
			require.True(t, wd.Allowed)
			wb = append(make([]uint64, 0, len(wb)+1), wb...)
			exchange(st, now)
		}
		own, ok := st[0].OwnOf([]byte("k"))
		require.True(t, ok)
		assert.Equal(t, p, own.Params)
		now := t0 + int64(13*time.Second)
		assert.Equal(t, p.Count(ws, wb, now), p.Count(own.State, own.Counters, now), "%v count", lim)
		assert.Equal(t, p.Expiry(ws, wb), p.Expiry(own.State, own.Counters), "%v expiry", lim)
		require.NoError(t, p.CheckState(own.State, own.Counters))
	}
}

// TestRestoreAfterEveryRegionRestarts: when every region restarts at once
// no other region can echo a region's units back; the key store's copy
// is what keeps them.
func TestRestoreAfterEveryRegionRestarts(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	st := newStores(t, 3, 0.1, 0.5) // e = 3, φ = 16
	admit := func(st []*Store, r int, now int64) int {
		n := 0
		for i := 0; i < 200; i++ {
			if st[r].Decide([]byte("k"), lim, now, 1, false).Allowed {
				n++
			}
			exchange(st, now)
		}
		return n
	}
	require.Equal(t, 68, admit(st, 0, t0))
	own, ok := st[0].OwnOf([]byte("k"))
	require.True(t, ok)

	for _, restore := range []bool{false, true} {
		again := newStores(t, 3, 0.1, 0.5)
		for i := range again {
			again[i].cfg.Epoch = t0 + int64(time.Second)
		}
		if restore {
			require.True(t, again[0].Restore(own))
		}
		now := t0 + int64(2*time.Second)
		exchange(again, now) // epochs, echoes
		exchange(again, now)
		total := admit(again, 0, now) + admit(again, 1, now) + admit(again, 2, now)
		if restore {
			assert.Equal(t, 32, total, "restored: eu has its 68, us and ap their reserves")
		} else {
			assert.Equal(t, 100, total, "lost: the window starts over")
		}
	}
}

func TestForgetKeepsOthersUnits(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	st := newStores(t, 2, 1, 0)
	for _, r := range []int{0, 1} {
		require.True(t, st[r].Decide([]byte("k"), lim, t0, 30, false).Allowed)
		exchange(st, t0)
	}
	st[0].Forget([]byte("k"))
	_, ok := st[0].OwnOf([]byte("k"))
	assert.False(t, ok)
	d := st[0].Decide([]byte("k"), lim, t0, 71, true)
	assert.False(t, d.Allowed, "region 1's 30 still count")
	assert.Equal(t, int64(30), d.Others)
	assert.True(t, st[0].Decide([]byte("k"), lim, t0, 50, false).Allowed, "its own 30 are forgotten: within the escrow of 50")

	st[1].Drop([]byte("new"))
	require.True(t, st[1].Decide([]byte("new"), lim, t0, 5, false).Allowed)
	st[1].Drop([]byte("new"))
	assert.False(t, st[1].Has([]byte("new")))
	assert.Equal(t, int64(30), st[1].Stats(t0).Admitted)
}

// TestRecoveringMakesNoKeys: a region that has just started denies every
// key until the others echo (Recovering), and those denials leave no
// state behind: a flood of new keys then costs nothing to hold or sweep.
func TestRecoveringMakesNoKeys(t *testing.T) {
	cfg := Defaults(0, 2)
	cfg.Epoch = t0
	s, err := New(cfg)
	require.NoError(t, err)
	lim := Limit{Kind: window.KindSlide, Limit: 100, Window: time.Minute}
	for i := range 100 {
		d := s.Decide([]byte{'k', byte(i)}, lim, t0+int64(time.Second), 1, false)
		require.Equal(t, DeniedRecovering, d.Mode)
	}
	assert.Zero(t, s.Keys())

	s.Receive(&Batch{From: 1, Epoch: 1, EchoFor: []int64{t0}, Echo: []Entry{}}, t0)
	d := s.Decide([]byte("k"), lim, t0+int64(time.Second), 1, false)
	assert.True(t, d.Allowed && d.Made, "the first decision on a key makes it")
	d = s.Decide([]byte("k"), lim, t0+int64(time.Second), 1, false)
	assert.True(t, d.Allowed && !d.Made)
	b := s.Sync(t0 + int64(time.Second))[1]
	require.Len(t, b.Entries, 1, "a key charged twice between syncs is sent once")
	assert.Equal(t, int64(2), b.Entries[0].Count)
}
