package persistence

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deltaModel is a primary and its backup's copies, shipped to as the
// server's replicator does: every drain's changes cut at the start of the
// drain before less a margin (Cut), encoded as deltas, completed on the
// backup, and the keys whose deltas miss shipped whole next.
type deltaModel struct {
	t            *testing.T
	rng          *rand.Rand
	prim, copies *shard.Map
	feed         *Feed
	sink         *shipSink
	now, cut     int64
	whole        map[string]bool // keys to ship whole next
	reparam      map[string]bool // keys whose parameters changed since their last shipment
	// revived are the keys a late decision kept alive though they had
	// expired at the clock's time, when a backup's import or sweep drops them.
	revived        map[string]bool
	params         map[string]window.Params
	deltas, missed int
	fulls          int
}

const modelMargin = int64(time.Second)

var modelParams = []window.Params{
	{Kind: window.KindSlide, Limit: 500, Period: time.Minute},
	{Kind: window.KindSlide, Limit: 5000, Period: 3 * time.Hour}, // counters 3 s wide
	{Kind: window.KindLog, Limit: 60, Period: 3 * time.Second},
	{Kind: window.KindToken, Limit: 100, Rate: 10, Period: time.Minute},
	{Kind: window.KindFixed, Limit: 50, Period: 20 * time.Second, FirstHit: true},
}

func newDeltaModel(t *testing.T, seed uint64) *deltaModel {
	m := &deltaModel{t: t, rng: rand.New(rand.NewPCG(seed, seed)), prim: newMap(t, 4), copies: newMap(t, 4),
		now: t0.UnixNano(), whole: map[string]bool{}, reparam: map[string]bool{}, revived: map[string]bool{}, params: map[string]window.Params{}}
	m.feed = NewFeed(m.prim)
	m.sink = &shipSink{copies: m.copies}
	m.feed.Subscribe(m.sink)
	return m
}

// decide makes a decision on a random key stamped at, sometimes with
// other parameters than the key's, sometimes deleting it instead.
func (m *deltaModel) decide(at int64) {
	key := fmt.Sprintf("k:%d", m.rng.IntN(40))
	p, ok := m.params[key]
	if !ok {
		p = modelParams[m.rng.IntN(len(modelParams))]
	}
	switch r := m.rng.IntN(200); {
	case r == 0:
		m.prim.Delete([]byte(key))
		delete(m.params, key)
		return
	case r == 1 && p.Kind != window.KindToken:
		p.Limit += int64(1 + m.rng.IntN(10)) // same kind, other parameters: the counters stay
		m.reparam[key] = true
	}
	if e, ok := m.prim.Lookup([]byte(key), nil); ok && at < m.now && e.Expiry() <= m.now {
		m.revived[key] = true
	}
	if _, err := m.prim.Decide([]byte(key), p, at, int64(1+m.rng.IntN(3)), false); err == nil {
		m.params[key] = p
	}
}

// interval moves the clock by up to step, making decisions on the way,
// ships and checks the copies, then makes a few decisions stamped up to
// lag before the drain's start.
func (m *deltaModel) interval(round int, step, lag int64) {
	end := m.now + 1 + m.rng.Int64N(step)
	for at := m.now; at < end; at += 1 + m.rng.Int64N(step/8+1) {
		m.decide(at)
	}
	m.now = end
	m.ship()
	m.check(round)
	for range m.rng.IntN(3) {
		m.decide(m.now - m.rng.Int64N(lag+1)) // read the clock before the drain, changed the key after it
	}
}

// ship drains, cuts and ships as the replicator does, or, one time in
// twenty, drops the shipment and makes a full sync instead.
func (m *deltaModel) ship() {
	start := m.now
	m.feed.Drain()
	since := int64(0)
	if m.cut > 0 {
		since = m.cut - modelMargin
	}
	m.cut = start
	es := m.sink.es
	for i := range es {
		Cut(&es[i], since)
		if m.whole[string(es[i].Key)] {
			es[i].Kept = 0
			delete(m.whole, string(es[i].Key))
		}
		if es[i].Kept > 0 {
			m.deltas++
		}
	}
	if m.rng.IntN(20) == 0 {
		m.sink.es, m.sink.keys, m.sink.ctrs = m.sink.es[:0], m.sink.keys[:0], m.sink.ctrs[:0]
		m.fullSync()
		return
	}
	m.sink.chunks = AppendDeltaChunks(m.sink.chunks[:0], es, m.now, 4<<10, m.sink.fresh)
	m.sink.es, m.sink.keys, m.sink.ctrs = m.sink.es[:0], m.sink.keys[:0], m.sink.ctrs[:0]
	for _, c := range m.sink.chunks {
		m.sink.dec.Deltas = true
		_, err := m.sink.dec.Decode(c, func(es []shard.Entry) error {
			for len(es) > 0 {
				n, err := m.copies.ImportBatch(es, m.now)
				if err == nil {
					break
				}
				require.ErrorIs(m.t, err, shard.ErrDelta)
				m.missedDelta(string(es[n].Key))
				es = es[n+1:]
			}
			return nil
		})
		require.NoError(m.t, err)
	}
	for _, set := range []map[string]bool{m.reparam, m.revived} {
		for k := range set {
			if !m.whole[k] {
				delete(set, k) // shipped, completed or not
			}
		}
	}
}

func (m *deltaModel) missedDelta(key string) {
	m.missed++
	m.whole[key] = true
	m.prim.Touch([]byte(key), nil)
}

// fullSync replaces every copy with the primary's state, whole.
func (m *deltaModel) fullSync() {
	m.fulls++
	m.copies.Flush()
	clear(m.whole)
	var es []shard.Entry
	for i := range m.prim.Shards() {
		es = m.prim.ExportShard(i, es)
	}
	_, err := ImportEntries(AppendEntries(nil, es, m.now), m.copies, m.now)
	require.NoError(m.t, err)
}

// check requires every copy to equal its key's state on the primary, but
// for the keys due to be shipped whole.
func (m *deltaModel) check(round int) {
	live := func(mp *shard.Map) []shard.Entry {
		var out []shard.Entry
		for _, e := range exportAll(mp) {
			if e.Expiry() > m.now && !m.whole[string(e.Key)] {
				out = append(out, e)
			}
		}
		return out
	}
	want, got := live(m.prim), live(m.copies)
	if !slices.EqualFunc(want, got, sameState) {
		require.Equal(m.t, want, got, "round %d: the copies equal the primary", round)
	}
}

func sameState(a, b shard.Entry) bool {
	return bytes.Equal(a.Key, b.Key) && a.Params == b.Params && a.State == b.State && slices.Equal(a.Counters, b.Counters)
}

// TestDeltaModel: over a long random trace of decisions, parameter changes,
// deletes, expiries and sweeps on a primary, with shipments dropped for a
// full sync now and then, the backup's copies equal the primary's state
// after every shipment, but for the keys whose deltas missed, which the
// next shipment carries whole. While no change lags its clock by more than
// the margin, a delta misses only for a key whose parameters changed, or
// that a late decision kept alive after the backup dropped it as expired;
// with lags past the margin more miss, and the copies still come right.
func TestDeltaModel(t *testing.T) {
	for _, c := range []struct {
		name      string
		lag       int64
		onlyParam bool
	}{{"lag within the margin", modelMargin, true}, {"lag past the margin", 3 * modelMargin, false}} {
		t.Run(c.name, func(t *testing.T) {
			m := newDeltaModel(t, 11)
			rounds := 3000
			if testing.Short() {
				rounds = 600
			}
			for round := range rounds {
				step := []int64{int64(time.Millisecond), int64(100 * time.Millisecond), int64(1500 * time.Millisecond)}[m.rng.IntN(3)]
				excused := maps2set(m.reparam, m.revived)
				whole := maps2set(m.whole)
				m.interval(round, step, c.lag)
				for k := range m.whole {
					require.Truef(t, !c.onlyParam || whole[k] || excused[k] || m.reparam[k] || m.revived[k],
						"round %d: %s missed, with no parameter change and no late decision on an expired key", round, k)
				}
				if m.rng.IntN(50) == 0 {
					m.prim.Sweep(m.now, 100)
					m.copies.Sweep(m.now, 100)
				}
				if m.rng.IntN(300) == 0 {
					m.now += int64(5 * time.Minute) // every Slide minute key expires
				}
			}
			for range 2 { // a quiet interval ships every key due whole
				m.now += int64(time.Millisecond)
				m.ship()
			}
			assert.Empty(t, m.whole)
			m.check(rounds)
			t.Logf("%d deltas, %d missed, %d full syncs", m.deltas, m.missed, m.fulls)
			require.Greater(t, m.deltas, rounds, "most shipments carry deltas")
			require.Less(t, m.missed*20, m.deltas, "few deltas miss")
		})
	}
}

func maps2set(ms ...map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
