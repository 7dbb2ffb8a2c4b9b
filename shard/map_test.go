package shard

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type step struct {
	at            time.Duration // since t0; may step backwards
	cost          int64
	wantAllowed   bool
	wantRemaining int64
	wantWait      time.Duration
}

// walk decides steps on key in m, peeking first to check that a peek gives
// the same reply, then checks each decision.
func walk(t *testing.T, m *Map, key string, p window.Params, steps []step) {
	t.Helper()
	for i, st := range steps {
		call := fmt.Sprintf("%v(t%d=%v, cost %d)", p.Kind, i, st.at, st.cost)
		peeked, err := m.Decide([]byte(key), p, t0+int64(st.at), st.cost, true)
		require.NoError(t, err, call)
		d, err := m.Decide([]byte(key), p, t0+int64(st.at), st.cost, false)
		require.NoError(t, err, call)
		assert.Equalf(t, st.wantAllowed, d.Allowed, "%s = %s, want %s", call, verdict(d.Allowed), verdict(st.wantAllowed))
		assert.Equalf(t, st.wantRemaining, d.Remaining, "%s remaining", call)
		assert.Equalf(t, st.wantWait, d.Wait, "%s wait", call)
		assert.Equalf(t, d, peeked, "%s peek reply differs", call)
	}
}

func TestDecide(t *testing.T) {
	m := newMap(t, Config{})
	walk(t, m, "user:1", slideP(3, 10*time.Second), []step{
		{0, 1, true, 2, 0},
		{500 * time.Millisecond, 2, true, 0, 0},
		{time.Second, 1, false, 0, 9 * time.Second},
		{9999 * time.Millisecond, 4, false, 0, window.Never},
		{10 * time.Second, 3, true, 0, 0},
		{5 * time.Second, 1, false, 0, 10 * time.Second}, // clock stepped back: clamped to 10 s
	})
	walk(t, m, "user:2", tokenP(2, 1, time.Second), []step{
		{0, 1, true, 1, 0},
		{0, 1, true, 0, 0},
		{0, 1, false, 0, time.Second},
		{500 * time.Millisecond, 1, false, 0, 500 * time.Millisecond},
		{time.Second, 1, true, 0, 0},
		{time.Second, 3, false, 0, window.Never},
	})
	assert.EqualValues(t, 2, m.Len())
	st := m.Stats()
	assert.EqualValues(t, 6, st.Allowed) // peeks count nowhere
	assert.EqualValues(t, 6, st.Denied)
	checkInvariants(t, m)
}

func TestDecideRejectsBadInput(t *testing.T) {
	m := newMap(t, Config{})
	_, err := m.Decide([]byte("k"), slideP(0, time.Second), t0, 1, false)
	assert.ErrorIs(t, err, window.ErrLimit)
	_, err = m.Decide([]byte("k"), slideP(1, 1500*time.Millisecond), t0, 1, false)
	assert.ErrorIs(t, err, window.ErrWindow)
	_, err = m.Decide([]byte("k"), slideP(1, time.Second), t0, 0, false)
	assert.ErrorIs(t, err, window.ErrCost)
	_, err = m.Decide([]byte("k"), window.Params{Kind: 99, Limit: 1, Rate: 1, Period: time.Second}, t0, 1, false)
	assert.ErrorIs(t, err, window.ErrKind)
	assert.Zero(t, m.Len())
	assert.Zero(t, m.Stats().Errors, "bad input is not a decision")
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{{Shards: 3}, {Shards: -4}, {Shards: MaxShards * 2}, {MaxKeys: -1}, {MaxMemory: -1}, {Grace: -time.Second}} {
		_, err := New(cfg)
		assert.Errorf(t, err, "New(%+v)", cfg)
	}
	m, err := New(Config{})
	require.NoError(t, err)
	assert.Len(t, m.shards, DefaultShards)
	assert.Equal(t, DefaultGrace, m.cfg.Grace)
}

func TestPeekCreatesNoKey(t *testing.T) {
	m := newMap(t, Config{})
	for _, p := range []window.Params{slideP(5, time.Minute), tokenP(5, 1, time.Second)} {
		d, err := m.Decide([]byte("new"), p, t0, 2, true)
		require.NoError(t, err)
		assert.Equal(t, window.Decision{Allowed: true, Limit: 5, Remaining: 3, Reset: d.Reset}, d)
		_, ok := m.Get([]byte("new"), t0)
		assert.False(t, ok, "%v peek created the key", p.Kind)
	}
	assert.Zero(t, m.Len())
	assert.Zero(t, m.Stats().Bytes)
}

func TestPeekLeavesParamsAlone(t *testing.T) {
	m := newMap(t, Config{})
	p := slideP(2, time.Minute)
	_, err := m.Decide([]byte("k"), p, t0, 2, false)
	require.NoError(t, err)
	d, err := m.Decide([]byte("k"), slideP(10, time.Minute), t0, 1, true)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "peek under a raised limit")
	inf, _ := m.Get([]byte("k"), t0)
	assert.Equal(t, p, inf.Params, "a peek re-parameterised the key")
	d, err = m.Decide([]byte("k"), p, t0, 1, false)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	checkInvariants(t, m)
}

func TestDeniedNewKeyCreatesNothing(t *testing.T) {
	m := newMap(t, Config{})
	d, err := m.Decide([]byte("k"), slideP(3, time.Minute), t0, 4, false)
	require.NoError(t, err)
	assert.Equal(t, window.Decision{Limit: 3, Remaining: 3, Wait: window.Never}, d)
	d, err = m.Decide([]byte("k"), tokenP(3, 1, time.Second), t0, 4, false)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Zero(t, m.Len())
	assert.Zero(t, m.Stats().Bytes)
}

func TestWrongType(t *testing.T) {
	m := newMap(t, Config{})
	slide, token := slideP(3, time.Minute), tokenP(3, 1, time.Second)
	_, err := m.Decide([]byte("s"), slide, t0, 1, false)
	require.NoError(t, err)
	_, err = m.Decide([]byte("t"), token, t0, 1, false)
	require.NoError(t, err)
	for _, peek := range []bool{false, true} {
		_, err = m.Decide([]byte("s"), token, t0, 1, peek)
		assert.ErrorIs(t, err, ErrWrongType)
		_, err = m.Decide([]byte("t"), slide, t0, 1, peek)
		assert.ErrorIs(t, err, ErrWrongType)
	}
	inf, _ := m.Get([]byte("s"), t0)
	assert.Equal(t, Info{Params: slide, Count: 1, Expiry: t0 + 60*sec}, inf)
	inf, _ = m.Get([]byte("t"), t0)
	assert.Equal(t, Info{Params: token, Count: 2, Expiry: t0 + sec}, inf)
	checkInvariants(t, m)
}

func TestReparameterise(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	low, high := slideP(2, time.Minute), slideP(3, time.Minute)
	walk(t, m, "a", low, []step{{0, 1, true, 1, 0}, {0, 1, true, 0, 0}, {0, 1, false, 0, 60 * time.Second}})
	walk(t, m, "a", high, []step{{0, 1, true, 0, 0}}) // raising the limit frees room at once
	walk(t, m, "a", low, []step{{0, 1, false, 0, 60 * time.Second}})
	walk(t, m, "b", tokenP(1, 1, time.Minute), []step{{0, 1, true, 0, 0}, {time.Second, 1, false, 0, 59 * time.Second}})
	walk(t, m, "b", tokenP(100, 1, time.Minute), []step{{time.Second, 1, true, 98, 0}})
	s := m.shards[0]
	assert.Equal(t, 2, s.params.live(), "params keys use")
	assert.LessOrEqual(t, len(s.params.ids), 2+maxIdleParams, "params no key uses any more are dropped past a bound")
	checkInvariants(t, m)
}

func TestGet(t *testing.T) {
	m := newMap(t, Config{})
	_, ok := m.Get([]byte("none"), t0)
	assert.False(t, ok)
	p := slideP(10, 10*time.Second)
	for i, cost := range []int64{3, 2, 1} {
		_, err := m.Decide([]byte("s"), p, t0+int64(i)*4*sec, cost, false)
		require.NoError(t, err)
	}
	inf, ok := m.Get([]byte("s"), t0+10*sec)
	require.True(t, ok)
	assert.Equal(t, Info{Params: p, Count: 3, Expiry: t0 + 18*sec}, inf, "the second-0 counter has left the window")
	tp := tokenP(10, 1, time.Second)
	_, err := m.Decide([]byte("t"), tp, t0, 4, false)
	require.NoError(t, err)
	inf, _ = m.Get([]byte("t"), t0+sec)
	assert.Equal(t, Info{Params: tp, Count: 7, Expiry: t0 + 4*sec}, inf)
}

func TestDelete(t *testing.T) {
	m := newMap(t, Config{})
	p := slideP(1, time.Minute)
	_, err := m.Decide([]byte("k"), p, t0, 1, false)
	require.NoError(t, err)
	assert.True(t, m.Delete([]byte("k")))
	assert.False(t, m.Delete([]byte("k")))
	assert.Zero(t, m.Len())
	d, err := m.Decide([]byte("k"), p, t0, 1, false)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "a deleted key starts afresh")
	checkInvariants(t, m)
}

func TestFlush(t *testing.T) {
	m := newMap(t, Config{Shards: 4})
	p := slideP(1, time.Minute)
	for i := range 100 {
		_, err := m.Decide(fmt.Appendf(nil, "k%d", i), p, t0, 1, false)
		require.NoError(t, err)
	}
	m.Flush()
	assert.Zero(t, m.Len())
	assert.Zero(t, m.Stats().Bytes)
	keys, cursor := m.Scan(nil, 0, 1000)
	assert.Empty(t, keys)
	assert.Zero(t, cursor)
	d, err := m.Decide([]byte("k1"), p, t0, 1, false)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	checkInvariants(t, m)
}

// fill adds keys prefix0, prefix1, … until Decide fails, and returns how many fit.
func fill(t *testing.T, m *Map, prefix string, most int) int {
	t.Helper()
	for i := range most {
		_, err := m.Decide(fmt.Appendf(nil, "%s%d", prefix, i), slideP(2, time.Minute), t0, 1, false)
		if err != nil {
			require.ErrorIs(t, err, ErrFull)
			return i
		}
	}
	return most
}

// checkFull asserts that a new key gets ErrFull while existing key "k0" keeps
// working, peeks and denials of new keys still answer, and Delete makes room.
func checkFull(t *testing.T, m *Map) {
	t.Helper()
	_, err := m.Decide([]byte("new"), slideP(2, time.Minute), t0, 1, false)
	assert.ErrorIs(t, err, ErrFull)
	d, err := m.Decide([]byte("k0"), slideP(2, time.Minute), t0, 1, false)
	require.NoError(t, err, "an existing key must keep working")
	assert.True(t, d.Allowed)
	d, err = m.Decide([]byte("k0"), slideP(2, time.Minute), t0, 1, false)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	_, err = m.Decide([]byte("new"), slideP(2, time.Minute), t0, 1, true)
	assert.ErrorIs(t, err, ErrFull, "a peek replies as the same call would")
	_, err = m.Decide([]byte("k0"), slideP(2, time.Minute), t0, 1, true)
	assert.NoError(t, err, "a peek of an existing key needs no room")
	for _, peek := range []bool{false, true} {
		d, err = m.Decide([]byte("new"), slideP(2, time.Minute), t0, 3, peek)
		assert.NoError(t, err, "a denied request creates nothing (peek %v)", peek)
		assert.False(t, d.Allowed)
	}
	m.Flush()
	_, err = m.Decide([]byte("new"), slideP(2, time.Minute), t0, 1, false)
	assert.NoError(t, err, "room after Flush")
}

func TestMaxKeys(t *testing.T) {
	m := newMap(t, Config{Shards: 4, MaxKeys: 10})
	require.Equal(t, 10, fill(t, m, "k", 100))
	require.True(t, m.Delete([]byte("k9")))
	_, err := m.Decide([]byte("k9"), slideP(2, time.Minute), t0, 1, false)
	require.NoError(t, err, "Delete makes room")
	checkFull(t, m)
}

// TestMaxKeysExact races inserts on every shard: exactly MaxKeys may succeed.
func TestMaxKeysExact(t *testing.T) {
	m := newMap(t, Config{Shards: 64, MaxKeys: 100})
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range 8 {
		wg.Go(func() {
			<-start
			for i := range 1000 {
				_, err := m.Decide(fmt.Appendf(nil, "g%d-%d", g, i), slideP(1, time.Minute), t0, 1, false)
				if err != nil {
					assert.ErrorIs(t, err, ErrFull)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	assert.EqualValues(t, 100, m.Len())
	checkInvariants(t, m)
}

func TestMaxMemory(t *testing.T) {
	m := newMap(t, Config{Shards: 1, MaxMemory: 300 << 10})
	n := fill(t, m, "k", 1e6)
	require.Less(t, n, int(1e6), "MaxMemory never stopped new keys")
	assert.GreaterOrEqual(t, m.Stats().Bytes, int64(300<<10))
	overshoot := arenaPage + slotsPerPage*slotBytes + m.shards[0].index.bytes()/2 // the last insert may double the index
	assert.LessOrEqual(t, m.Stats().Bytes, int64(300<<10+overshoot), "a full Map overshoots MaxMemory by at most a page each")
	checkFull(t, m)
}

// TestCountersGrowAndShrink drives Slide keys through every counter storage:
// inline, blocks of each size up to a full window of 3600 counters, coarse
// counters of long windows, re-parameterisations that leave fine counters in
// a coarse window (over 5000 counters), blocks shrinking as traffic slows, and
// back inline. Every decision must equal the reference.
func TestCountersGrowAndShrink(t *testing.T) {
	type phase struct {
		p    window.Params
		step int64 // mean seconds between requests
	}
	hour, twoHours := slideP(1e6, time.Hour), slideP(1e6, 2*time.Hour)
	cases := []struct {
		name   string
		phases []phase
		peak   int // words in counter blocks at the peak, at least
		end    int // words in counter blocks at the end of the phases, at most
	}{
		{"minute", []phase{{slideP(1e6, time.Minute), 1}}, 64, 64},
		{"ten days", []phase{{slideP(1e6, 240*time.Hour), 240}}, 4096, 4096},
		{"hour then two", []phase{{hour, 1}, {twoHours, 1}}, 8192, 8192},
		{"two then hour", []phase{{twoHours, 1}, {hour, 1}}, 4096, 4096},
		{"busy then quiet", []phase{{hour, 1}, {hour, 60}}, 4096, 256},
		{"tight limit", []phase{{slideP(500, time.Hour), 1}}, 256, 512},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, ref := newMap(t, Config{Shards: 1}), newModel()
			r := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			now, peak := t0, 0
			for _, ph := range tc.phases {
				now = runPhase(t, m, ref, ph.p, now, ph.step, r, &peak)
			}
			assert.GreaterOrEqual(t, peak, tc.peak, "words in counter blocks at the peak")
			assert.LessOrEqual(t, m.shards[0].ext.words, tc.end, "words in counter blocks at the end")
			// Quiet until the window has passed, then one request: back inline.
			p := tc.phases[len(tc.phases)-1].p
			now += int64(p.Period) + sec
			decideBoth(t, m, ref, "k", p, now, 1, false)
			assert.Zero(t, m.shards[0].ext.words, "counters stayed in a block")
			checkKeys(t, m, ref, now)
			checkInvariants(t, m)
		})
	}
}

// runPhase decides requests on key "k" under p, about step seconds apart,
// until a full window has passed, and returns the clock. It raises peak to
// the most words the shard's counter blocks held.
func runPhase(t *testing.T, m *Map, ref *model, p window.Params, now, step int64, r *rand.Rand, peak *int) int64 {
	t.Helper()
	for end := now + int64(p.Period) + sec; now < end; now += step*sec/2 + r.Int64N(step*sec) {
		decideBoth(t, m, ref, "k", p, now, 1+r.Int64N(3), r.IntN(8) == 0)
		*peak = max(*peak, m.shards[0].ext.words)
	}
	checkKeys(t, m, ref, now)
	checkInvariants(t, m)
	return now
}
