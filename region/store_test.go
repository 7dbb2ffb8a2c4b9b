package region

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

var t0 = int64(1_800_000_000) * int64(time.Second)

func newStores(t *testing.T, r int, escrow, reserve float64) []*Store {
	out := make([]*Store, r)
	for i := range out {
		cfg := Defaults(i, r)
		cfg.Escrow, cfg.Reserve = escrow, reserve
		s, err := New(cfg)
		require.NoError(t, err)
		out[i] = s
	}
	return out
}

// exchange carries one round of batches and acknowledgements between the
// regions not in cut.
func exchange(stores []*Store, now int64, cut ...int) {
	off := map[int]bool{}
	for _, c := range cut {
		off[c] = true
	}
	for from, s := range stores {
		for to, b := range s.Sync(now) {
			if b == nil || off[from] || off[to] {
				continue
			}
			stores[from].Acked(stores[to].Receive(b, now), now)
		}
	}
}

func TestDecideWalk(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	st := newStores(t, 2, 0.1, 0) // e = 5, no reserve
	steps := []struct {
		region     int
		at         time.Duration
		cost       int64
		sync       bool
		wantMode   Mode
		wantRemain int64
	}{
		{0, 0, 3, false, Escrowed, 97},
		{0, time.Second, 2, false, Escrowed, 95},
		{0, 2 * time.Second, 1, false, DeniedEscrow, 95}, // 5 unacknowledged: the escrow is spent
		{0, 3 * time.Second, 1, true, Escrowed, 94},      // acknowledged
		{1, 4 * time.Second, 90, true, DeniedEscrow, 94}, // 90 > e
		{1, 5 * time.Second, 5, false, Escrowed, 89},
		{0, 6 * time.Second, 5, true, Escrowed, 84},
		{0, 7 * time.Second, 85, true, DeniedLimit, 84},
		{0, time.Minute, 5, false, Escrowed, 95}, // the next window
	}
	for i, s := range steps {
		now := t0 + int64(s.at)
		if s.sync {
			exchange(st, now)
		}
		d := st[s.region].Decide([]byte("k"), lim, now, s.cost, false)
		assert.Equal(t, s.wantMode, d.Mode, "step %d: region %d Decide(%v, cost %d)", i, s.region, s.at, s.cost)
		assert.Equal(t, s.wantRemain, d.Remaining, "step %d: remaining", i)
	}
}

// TestReserveAfterBorrowing is the schedule that breaks a fall-back to a
// static share L/R (TestStaticShareFallbackBreaksBound): one region takes
// most of the limit, then another is cut off. With the reserve counted by
// every region, the total stays within L.
func TestReserveAfterBorrowing(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 90, Window: time.Minute}
	st := newStores(t, 3, 0.1, 0.5) // e = 3, φ = 15
	var total int64
	now := t0
	for range 100 { // region 1 takes what it can, acknowledged as it goes
		now += int64(10 * time.Millisecond)
		if st[1].Decide([]byte("k"), lim, now, 1, false).Allowed {
			total++
		}
		exchange(st, now)
	}
	assert.Equal(t, int64(60), total, "region 1 leaves the other two regions' reserves")
	for range 100 { // region 0 is cut off; everyone keeps asking
		now += int64(10 * time.Millisecond)
		for r := range st {
			if st[r].Decide([]byte("k"), lim, now, 1, false).Allowed {
				total++
			}
		}
		exchange(st, now, 0)
	}
	assert.LessOrEqual(t, total, st[0].Config().Bound(90))
	assert.Equal(t, int64(90), total, "each cut-off region admits its reserve")
}

// TestStaticShareFallbackBreaksBound shows why the reserve exists: with
// the fall-back (past the escrow, admit while the region's own
// units fit L/R), a region that borrowed most of the limit before a
// partition leaves the others' shares spent, and each of them spends its
// share again. Three regions, L = 90, α = 0.1: region 1 admitted 80, all
// acknowledged, then region 0 is cut off. Regions 0 and 2 each fall back
// to L/R = 30 of their own: 80 + 30 + 30 = 140 > (1+α)·L = 99.
func TestStaticShareFallbackBreaksBound(t *testing.T) {
	const l, r, e = 90, 3, 3
	own := []int64{0, 80, 0}
	seen := [][]int64{{0, 80, 0}, {0, 80, 0}, {0, 80, 0}} // by viewer, of each region
	unacked := []int64{0, 0, 0}
	admit := func(x int) bool {
		view := int64(0)
		for y := range own {
			if y == x {
				view += own[y]
			} else {
				view += seen[x][y]
			}
		}
		ok := view+1 <= l && unacked[x]+1 <= e || own[x]+1 <= l/r
		if ok {
			own[x]++
			unacked[x]++ // region 0 acknowledges nothing; 0 hears nothing
		}
		return ok
	}
	for range 100 {
		for x := range own {
			admit(x)
			if x == 2 {
				seen[1][2] = own[2] // regions 1 and 2 still hear each other
			}
		}
	}
	total := own[0] + own[1] + own[2]
	assert.Greater(t, total, int64(99), "the static-share fall-back over-admits: %v", own)
}

func TestClockBackwards(t *testing.T) {
	lim := Limit{Kind: window.KindSlide, Limit: 10, Window: 10 * time.Second}
	s := newStores(t, 1, 1, 0)[0] // one region: everything is acknowledged at once
	for i := range 10 {
		require.True(t, s.Decide([]byte("k"), lim, t0+int64(i)*int64(time.Second), 1, false).Allowed)
	}
	d := s.Decide([]byte("k"), lim, t0-int64(time.Hour), 1, false)
	assert.False(t, d.Allowed, "an hour back is clamped to the newest charge, not a fresh window")
	assert.True(t, s.Decide([]byte("k"), lim, t0+int64(10*time.Second), 1, false).Allowed)
}

func TestSlideCountsClockAhead(t *testing.T) {
	lim := Limit{Kind: window.KindSlide, Limit: 10, Window: 5 * time.Second}
	st := newStores(t, 2, 1, 0) // e = 5
	ahead := t0 + int64(time.Second)
	for range 5 {
		require.True(t, st[1].Decide([]byte("k"), lim, ahead, 1, false).Allowed)
	}
	exchange(st, t0)
	d := st[0].Decide([]byte("k"), lim, t0, 1, true)
	assert.Equal(t, int64(5), d.Others, "a bucket charged by a clock ahead counts in the window now")
}

func TestValidate(t *testing.T) {
	assert.ErrorIs(t, Limit{Kind: window.KindToken, Limit: 1, Window: time.Second}.Validate(), ErrKind)
	assert.NoError(t, Limit{Kind: window.KindSlide, Limit: 1, Window: time.Second}.Validate())
	bad := Defaults(0, 2)
	bad.Escrow = 0
	_, err := New(bad)
	assert.ErrorIs(t, err, ErrConfig)
	cfg := Defaults(0, 3)
	assert.Equal(t, int64(1000+2*33), cfg.Bound(1000))
	assert.Equal(t, int64(10+2*1), cfg.Bound(10), "an escrow of at least one unit")
}

func TestSweepDropsIdleKeys(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 10, Window: time.Second}
	st := newStores(t, 2, 1, 0)
	st[0].Decide([]byte("k"), lim, t0, 1, false)
	exchange(st, t0)
	later := t0 + int64(10*time.Second)
	exchange(st, later)
	exchange(st, later) // the second measures what the first made final
	st[0].Sweep(later, 10)
	st[1].Sweep(later, 10)
	assert.Equal(t, 0, st[0].Keys())
	assert.Equal(t, 0, st[1].Keys())
	for _, s := range st {
		assert.Equal(t, int64(1), s.Stats(later).WindowsMeasured)
	}
}

// TestRestartRecoversOwnUnits: a region that restarts has lost its own
// counts. Until every other region has sent them back it decides nothing;
// then it knows them, and the limit holds across the restart.
func TestRestartRecoversOwnUnits(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	st := newStores(t, 2, 0.1, 0) // e = 5
	now := t0
	total := 0
	for range 30 {
		now += int64(10 * time.Millisecond)
		for range 5 {
			if st[0].Decide([]byte("k"), lim, now, 1, false).Allowed {
				total++
			}
		}
		exchange(st, now)
	}
	require.Equal(t, 100, total)
	cfg := st[0].Config()
	cfg.Epoch = now
	fresh, err := New(cfg)
	require.NoError(t, err)
	st[0] = fresh
	d := st[0].Decide([]byte("k"), lim, now, 1, false)
	assert.Equal(t, DeniedRecovering, d.Mode, "before region 1 has sent back region 0's units")
	exchange(st, now) // region 0 announces its epoch; region 1 answers with the echo
	exchange(st, now)
	d = st[0].Decide([]byte("k"), lim, now, 1, true)
	assert.Equal(t, DeniedLimit, d.Mode)
	assert.Equal(t, int64(100), d.Own, "region 0's units, recovered from region 1")
	assert.True(t, st[0].Decide([]byte("other"), lim, now, 1, false).Allowed, "other keys are decided again")
}

// TestStaleEpochIgnored: a batch or an acknowledgement of a store that has
// since restarted credits nothing.
func TestStaleEpochIgnored(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	st := newStores(t, 2, 0.1, 0)
	st[0].Decide([]byte("k"), lim, t0, 5, false)
	old := st[0].Sync(t0)[1]
	ack := st[1].Receive(old, t0)
	cfg := st[0].Config()
	cfg.Epoch = t0 + 1
	st[0], _ = New(cfg)
	later := t0 + int64(3*time.Minute) // past the recovery window
	require.True(t, st[0].Decide([]byte("x"), lim, later, 5, false).Allowed)
	newer := st[0].Sync(later)[1] // the new store's seq 1
	st[0].Acked(ack, later)       // the old store's seq 1
	assert.Equal(t, DeniedEscrow, st[0].Decide([]byte("x"), lim, later, 1, false).Mode,
		"the old store's acknowledgement of seq 1 must not credit the new store's seq 1")
	require.NotNil(t, st[1].Receive(newer, t0))
	assert.Nil(t, st[1].Receive(old, t0), "a batch of the old store, late, after the new one's")
}
