package region

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// TestHandoffTakesOldOwnersUnits: eu's m0 admits its reserve of a key
// (φ = 25 of L = 100) while no batch goes out, so neither its key store's
// copy nor us has any of it; then the key's slot moves to m1, with m0
// alive, and m0's batches reach us only a while later. m1 takes what m0 holds of the key (Hand, Take) before it
// decides: the window holds at most L + e = 105 across the move, and m1
// counts m0's 25 as eu's own. Without it (the form before) m1 knew only
// what us echoed and its copy held, none of the 25: m1 and us shared the
// whole limit on top of them, 125, which only the bound's max(e, φ) per
// move allowed.
func TestHandoffTakesOldOwnersUnits(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Hour}
	k := []byte("k")
	for _, take := range []bool{false, true} {
		eu, us := clusterRegions(t, 2)
		e, phi := us.Config().Budgets(lim.Limit)
		own := 0
		owner := func(string) int { return own }
		now := t0 + int64(time.Millisecond)
		for range 3 {
			exchangeCluster(eu, us, owner, 0, now)
		}
		admitted := int64(0)
		for range 2 * phi {
			now += int64(time.Millisecond)
			if eu[0].Decide(k, lim, now, 1, false).Allowed {
				admitted++
			}
		}
		require.Equal(t, phi, admitted, "m0 admits its reserve, no acknowledgement coming")
		own = 1
		if take {
			h := eu[0].Hand(func(key string) bool { return key == "k" })
			assert.Positive(t, eu[1].Take(h))
		}
		eu[1].Gain(now, 1, func(key string) bool { return key == "k" }, nil)
		for i := range 300 {
			now += int64(time.Millisecond)
			if eu[1].Decide(k, lim, now, 1, false).Allowed {
				admitted++
			}
			if us.Decide(k, lim, now, 1, false).Allowed {
				admitted++
			}
			nodes := eu
			if i < 100 {
				nodes = []*Store{nil, eu[1]} // m0's batches are late (its link busy, or slow): us has none of its units yet
			}
			exchangeCluster(nodes, us, owner, 1, now)
		}
		o, _ := eu[1].OwnOf(k)
		t.Logf("m1 took m0's units %v: the window holds %d of L %d (bound L + e = %d; with a move's max(e, φ) %d); m1's own units %d",
			take, admitted, lim.Limit, lim.Limit+e, lim.Limit+e+max(e, phi), o.State[1])
		if take {
			assert.LessOrEqual(t, admitted, lim.Limit+e, "the bound, with no term for the move")
			assert.GreaterOrEqual(t, admitted, lim.Limit, "the budget is not wasted")
			assert.GreaterOrEqual(t, int64(o.State[1]), phi, "m1 counts m0's units as eu's")
		} else {
			assert.Greater(t, admitted, lim.Limit+e, "before: the move lost m0's units to m1")
		}
	}
}

// TestHandTakeMerges: Take raises every bucket to the larger of the two
// (counts only grow), keeps a key held under another window as it is,
// marks the raised own units unacknowledged (they go to the others
// again) and copies them into the key store (DrainOwn).
func TestHandTakeMerges(t *testing.T) {
	eu, us := clusterRegions(t, 2)
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Hour}
	now := t0 + int64(time.Millisecond)
	owner := func(string) int { return 0 }
	for range 3 {
		exchangeCluster(eu, us, owner, 0, now)
	}
	for range 7 {
		require.True(t, us.Decide([]byte("a"), lim, now, 1, false).Allowed)
		require.True(t, eu[0].Decide([]byte("a"), lim, now, 1, false).Allowed)
	}
	require.True(t, eu[0].Decide([]byte("b"), lim, now, 3, false).Allowed)
	exchangeCluster(eu, us, owner, 0, now) // m0 receives us's 7 of a
	other := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	require.True(t, eu[1].Decide([]byte("b"), other, now, 1, false).Allowed)
	eu[1].DrainOwn(nil)

	h := eu[0].Hand(func(string) bool { return true })
	cur, _ := lim.span(now)
	assert.ElementsMatch(t, []Entry{{"a", lim, cur, 7}, {"b", lim, cur, 3}}, h.Own)
	require.Len(t, h.Seen, 2)
	assert.Empty(t, h.Seen[0], "eu's own are in Own")
	assert.Equal(t, []Entry{{"a", lim, cur, 7}}, h.Seen[1], "what m0 received of us")
	p, err := ReadHeld(AppendHeld(nil, h))
	require.NoError(t, err)
	assert.ElementsMatch(t, h.Own, p.Own)
	assert.Equal(t, h.Seen[1], p.Seen[1])
	_, err = ReadHeld(AppendHeld(nil, h)[:5])
	assert.ErrorIs(t, err, ErrWire)

	assert.Equal(t, 2, eu[1].Take(p), "a's own and us's units of a; b is held under another window")
	assert.Equal(t, 0, eu[1].Take(p), "counts only grow: nothing more")
	o, ok := eu[1].OwnOf([]byte("a"))
	require.True(t, ok)
	assert.Equal(t, uint64(7), o.State[1])
	o, _ = eu[1].OwnOf([]byte("b"))
	assert.Equal(t, time.Minute, o.Params.Period, "b keeps its window")
	assert.Equal(t, uint64(1), o.State[1])
	drained := eu[1].DrainOwn(nil)
	require.Len(t, drained, 1, "a's raised units go to the key store")
	assert.Equal(t, "a", drained[0].Key)
	d := eu[1].Decide([]byte("a"), lim, now, 1, true)
	assert.Equal(t, int64(7), d.Own)
	assert.Equal(t, int64(7), d.Others)
	b := eu[1].Sync(now)[1]
	assert.Contains(t, b.Entries, Entry{"a", lim, cur, 7}, "a's own units go to us, not acknowledged here")
}

// TestGainWhileRecoveringNamesSlots: eu's m1 is still recovering from its
// start (ap is down, so it never echoes) when it gains from m0 one slot
// whose keys are 100 of the 1,000 us holds. us, which has echoed m1's
// start, takes the new epoch as a restart of that slot only: it resends
// and echoes 100 entries; ap, which has not, would take it as a restart
// of everything. Before, a node still recovering from its start named no
// slots to anyone, and us resent and echoed all 1,000.
func TestGainWhileRecoveringNamesSlots(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Hour}
	slot := func(key string) int { return int(key[len(key)-1]) } // ten slots
	var eu []*Store
	for m := range 2 {
		cfg := Defaults(0, 3)
		cfg.Member, cfg.Epoch, cfg.Slot = fmt.Sprint("m", m), t0, slot
		if m == 0 {
			cfg.Epoch -= int64(3 * time.Hour) // long up; m1 has just started
		}
		s, err := New(cfg)
		require.NoError(t, err)
		eu = append(eu, s)
	}
	cfg := Defaults(1, 3)
	cfg.Epoch, cfg.Slot = t0-int64(3*time.Hour), slot // long up: it has nothing to recover
	us, err := New(cfg)
	require.NoError(t, err)
	view := uint64(0)
	owner := func(key string) int { return map[bool]int{false: 0, true: 1}[view > 0 && slot(key) == '7'] }
	now := t0 + int64(time.Millisecond)
	exchange := func(view uint64) { // eu and us only: ap is cut off
		for _, s := range eu {
			if b := s.Sync(now)[1]; b != nil {
				s.Acked(us.Receive(b, now), now)
			}
		}
		b := us.Sync(now)[0]
		parts := Split(b, len(eu), owner, view)
		acks := make([]*Ack, len(parts))
		for i, p := range parts {
			acks[i] = eu[i].Receive(p.Batch, now)
		}
		if a := Merge(b, parts, acks); a != nil {
			us.Acked(a, now)
		}
	}
	for range 3 {
		exchange(0)
	}
	for i := range 1000 {
		k := fmt.Appendf(nil, "k%04d", i)
		require.True(t, us.Decide(k, lim, now, 1, false).Allowed)
		require.True(t, eu[0].Decide(k, lim, now, 1, false).Allowed)
	}
	for range 3 {
		now += int64(10 * time.Millisecond)
		exchange(0)
	}
	require.False(t, eu[1].Recovered(), "ap has not echoed m1's start")
	gained := []int{slot("k0007")}
	view = 1 // slot 7 moves to m1
	eu[1].Gain(now, 1, func(key string) bool { return slot(key) == gained[0] }, gained)
	bs := eu[1].Sync(now)
	assert.Equal(t, gained, bs[1].Gained, "to us, which echoed m1's start: the gained slot")
	assert.Empty(t, bs[2].Gained, "to ap, which did not: a restart of everything")
	eu[1].Acked(us.Receive(bs[1], now), now)
	now += int64(10 * time.Millisecond)
	b := us.Sync(now)[0]
	t.Logf("us resends %d entries and echoes %d", len(b.Entries), len(b.Echo))
	assert.Len(t, b.Echo, 100, "the gained slot's keys (before: all 1,000)")
	assert.Len(t, b.Entries, 100)
	assert.True(t, eu[1].Recovering(lim, now), "m1 still waits for ap, or a window")
}
