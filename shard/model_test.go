package shard

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is the fake clock's origin: a whole second, so steps read as offsets.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()

const sec = int64(time.Second)

func slideP(limit int64, win time.Duration) window.Params {
	return window.Params{Kind: window.KindSlide, Limit: limit, Period: win}
}

func tokenP(capacity, rate int64, period time.Duration) window.Params {
	return window.Params{Kind: window.KindToken, Limit: capacity, Rate: rate, Period: period}
}

func verdict(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

// newMap returns a Map made with cfg, failing the test if New refuses it.
func newMap(t testing.TB, cfg Config) *Map {
	t.Helper()
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

// model is the reference for a Map: each key's parameters and state held in
// plain Go values (counters in an ordinary slice) and decided by window's
// functions directly. It has no limits, shards or sweeps of its own. It
// follows the contract: a key whose state has expired is absent for every
// request, even while it waits to be swept.
type model struct {
	keys map[string]*modelKey
}

type modelKey struct {
	p        window.Params
	counters []uint64     // Slide, Log
	state    window.State // Token, Fixed, Leaky
}

func newModel() *model { return &model{keys: make(map[string]*modelKey)} }

// decide is what Map.Decide must answer.
func (m *model) decide(key string, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	if err := check(p, cost); err != nil {
		return window.Decision{}, err
	}
	now = max(now, 0)
	k, ok := m.keys[key]
	switch {
	case !ok || k.info(now).Expiry <= now: // absent, or expired and so absent
		k = &modelKey{p: p}
		if d := k.decide(p, now, cost, true); peek || !d.Allowed {
			return d, nil
		}
		m.keys[key] = k
	case k.p.Kind != p.Kind:
		return window.Decision{}, ErrWrongType
	}
	if !peek {
		k.p = p
	}
	return k.decide(p, now, cost, peek), nil
}

func (k *modelKey) decide(p window.Params, now, cost int64, peek bool) window.Decision {
	var d window.Decision
	var b []uint64
	switch p.Kind {
	case window.KindToken:
		return p.Token().Decide(&k.state, now, cost, peek)
	case window.KindFixed:
		return p.Fixed().Decide(&k.state, now, cost, peek)
	case window.KindLeaky:
		return p.Leaky().Decide(&k.state, now, cost, peek)
	case window.KindLog:
		d, b = p.Log().Decide(slices.Grow(k.counters, 1), now, cost, peek)
	default:
		d, b = p.Slide().Decide(slices.Grow(k.counters, 1), now, cost, peek)
	}
	if !peek {
		k.counters = b
	}
	return d
}

func (k *modelKey) info(now int64) Info {
	inf := Info{Params: k.p}
	switch p := k.p; p.Kind {
	case window.KindToken:
		inf.Count, inf.Expiry = p.Token().Tokens(k.state, now), p.Token().Expiry(k.state)
	case window.KindFixed:
		inf.Count, inf.Expiry = p.Fixed().Count(k.state, now), p.Fixed().Expiry(k.state)
	case window.KindLeaky:
		inf.Count, inf.Expiry = p.Leaky().Queued(k.state, now), p.Leaky().Expiry(k.state)
	case window.KindLog:
		inf.Count, inf.Expiry = p.Log().Count(k.counters, now), p.Log().Expiry(k.counters)
	default:
		inf.Count, inf.Expiry = p.Slide().Count(k.counters, now), p.Slide().Expiry(k.counters)
	}
	return inf
}

// sweep frees the keys that Sweep(now, everything) must free and returns how many.
func (m *model) sweep(now int64, grace time.Duration) int {
	n := 0
	for key, k := range m.keys {
		if k.info(0).Expiry < now-int64(grace) {
			delete(m.keys, key)
			n++
		}
	}
	return n
}

// syncSwept drops from the model the keys that a partial Sweep freed from m,
// checking that each had expired more than grace before now.
func (m *model) syncSwept(t *testing.T, mp *Map, now int64, grace time.Duration) {
	t.Helper()
	for key, k := range m.keys {
		if _, ok := mp.Get([]byte(key), now); !ok {
			require.Lessf(t, k.info(now).Expiry, now-int64(grace), "Sweep(%d) freed %q before its grace ran out", now, key)
			delete(m.keys, key)
		}
	}
}

// decideBoth decides on mp and on the model and requires the same outcome.
func decideBoth(t *testing.T, mp *Map, ref *model, key string, p window.Params, now, cost int64, peek bool) window.Decision {
	t.Helper()
	d, ok := agree(t, mp, ref, key, p, now, cost, peek)
	if !ok {
		t.FailNow()
	}
	return d
}

// agree decides on mp and on the model and asserts the same outcome. Unlike
// decideBoth it may be called from any goroutine.
func agree(t *testing.T, mp *Map, ref *model, key string, p window.Params, now, cost int64, peek bool) (window.Decision, bool) {
	t.Helper()
	want, wantErr := ref.decide(key, p, now, cost, peek)
	got, err := mp.Decide([]byte(key), p, now, cost, peek)
	if err == wantErr && got == want { // format only on failure: this runs millions of times
		return got, true
	}
	call := fmt.Sprintf("Decide(%q, %v %d/%v, t0%+v, cost %d, peek %v)", key, p.Kind, p.Limit, p.Period, time.Duration(now-t0), cost, peek)
	return got, assert.ErrorIsf(t, err, wantErr, "%s error", call) &&
		assert.Equalf(t, want, got, "%s = %s, want %s", call, verdict(got.Allowed), verdict(want.Allowed))
}

// checkKeys asserts that mp holds exactly the model's keys with its state at now.
func checkKeys(t *testing.T, mp *Map, ref *model, now int64) {
	t.Helper()
	require.EqualValues(t, len(ref.keys), mp.Len(), "Len")
	for key, k := range ref.keys {
		got, ok := mp.Get([]byte(key), now)
		require.Truef(t, ok, "Get(%q) found nothing", key)
		assert.Equalf(t, k.info(now), got, "Get(%q)", key)
	}
}

// checkInvariants walks every shard and asserts that its index, overflow
// map, slots, params table, counter blocks and the Map's counts agree.
func checkInvariants(t *testing.T, m *Map) {
	t.Helper()
	var keys, bytes int64
	for si, s := range m.shards {
		s.mu.Lock()
		live := s.checkLocked(t, si)
		keys += int64(live)
		bytes += s.footprint
		require.Equalf(t, s.footprintLocked(), s.footprint, "shard %d footprint not accounted", si)
		s.mu.Unlock()
	}
	require.Equal(t, keys, m.Len(), "Len")
	require.Equal(t, bytes, m.Stats().Bytes, "Stats().Bytes")
}

// checkLocked asserts shard si's invariants and returns its live keys.
func (s *shard) checkLocked(t *testing.T, si int) int {
	t.Helper()
	live, refs, words := 0, map[uint32]int{}, 0
	for i := uint32(0); i < s.slots.next; i++ {
		sl := s.slots.at(i)
		if sl.key == 0 {
			require.Equalf(t, slot{}, *sl, "shard %d: free slot %d not zeroed", si, i)
			continue
		}
		live++
		key := s.keys.get(sl.key, sl.keyLen())
		j, ok := s.findLocked(key, s.hash(key))
		require.Truef(t, ok, "shard %d: key %q in slot %d not found", si, key, i)
		require.Equalf(t, i, j, "shard %d: key %q found in slot %d, lives in %d", si, key, j, i)
		require.NotZerof(t, sl.param(), "shard %d: key %q has no params", si, key)
		refs[sl.param()]++
		if sl.state[0] == extMark {
			words += 4 << classFor(cap(s.ext.counters(uint32(sl.state[1]))))
		}
	}
	require.Equalf(t, live, s.lenLocked(), "shard %d: index holds %d keys, slots %d", si, s.lenLocked(), live)
	checkIndex(t, &s.index)
	require.Equalf(t, len(s.slots.free), int(s.slots.next)-live, "shard %d: free list", si)
	require.Equalf(t, words, s.ext.words, "shard %d: counter block words", si)
	for id, n := range refs {
		require.Equalf(t, n, s.params.list[id].refs, "shard %d: refs of params %d", si, id)
	}
	require.Equalf(t, len(refs), s.params.live(), "shard %d: interned params in use", si)
	require.LessOrEqualf(t, s.params.idleCount(), maxIdleParams, "shard %d: idle params", si)
	require.Equalf(t, s.recountKindsLocked(), s.kinds, "shard %d: keys and bytes per kind", si)
	return live
}
