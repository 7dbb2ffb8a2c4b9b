package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// joinKey is one key's state as a store keeps it, for the Join tests.
type joinKey struct {
	s State
	b []uint64
}

// step decides (or, for a Lease, acquires or releases) one request at now.
func (k *joinKey) step(p Params, r *rand.Rand, now int64) {
	cost := 1 + r.Int64N(max(1, p.Limit/4))
	if p.Kind == KindLease {
		id := uint64(r.IntN(8))*2 + 1
		if r.IntN(3) == 0 {
			_, k.b = p.Lease().Release(slices.Grow(k.b, 2), now, id)
			return
		}
		_, k.b = p.Lease().Acquire(slices.Grow(k.b, 2), now, id, time.Duration(1+r.IntN(4000))*time.Millisecond, min(cost, p.Limit))
		return
	}
	_, k.b = p.Decide(&k.s, slices.Grow(k.b, 1), now, cost, false)
}

// allows reports whether k admits cost units at t, changing nothing.
func (k joinKey) allows(p Params, t, cost int64) bool {
	s := k.s
	d, _ := p.Decide(&s, slices.Grow(slices.Clone(k.b), 1), t, cost, true)
	return d.Allowed
}

func joinParams(r *rand.Rand) Params {
	limit := 1 + r.Int64N(40)
	switch r.IntN(6) {
	case 0:
		return Params{Kind: KindSlide, Limit: limit, Period: time.Duration(1+r.IntN(5)) * time.Second}
	case 1:
		return Params{Kind: KindLog, Limit: limit, Period: time.Duration(1+r.IntN(3000)) * time.Millisecond}
	case 2:
		return Params{Kind: KindToken, Limit: limit, Rate: 1 + r.Int64N(20), Period: time.Second}
	case 3:
		return Params{Kind: KindLeaky, Limit: limit, Rate: 1 + r.Int64N(20), Period: time.Second}
	case 4:
		return Params{Kind: KindFixed, Limit: limit, Period: time.Duration(1+r.IntN(3)) * time.Second, FirstHit: r.IntN(2) == 0}
	}
	return Params{Kind: KindLease, Limit: limit}
}

// TestJoinRestrictsAsMuchAsEither forks a key's state at random: two nodes
// decide on from one common history, each on its own, with clocks up to a
// second apart. At any time from the join on (and past both clocks), a request the joined state
// admits is one both states admit; and joining a state with itself, or
// with the state it grew from, admits what it admits.
func TestJoinRestrictsAsMuchAsEither(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 19))
	traces := 20000
	if underRace { // one goroutine: the race detector only slows it down
		traces = 2000
	}
	for trace := range traces {
		p := joinParams(r)
		require.NoError(t, p.Validate())
		base := int64(1_700_000_000)*int64(time.Second) + r.Int64N(int64(time.Second))
		var common joinKey
		now := base
		for range r.IntN(30) {
			now += r.Int64N(int64(300 * time.Millisecond))
			common.step(p, r, now)
		}
		a, c := joinKey{common.s, slices.Clone(common.b)}, joinKey{common.s, slices.Clone(common.b)}
		na, nc := now, now+r.Int64N(int64(time.Second))-int64(500*time.Millisecond)
		for range r.IntN(30) {
			na += r.Int64N(int64(300 * time.Millisecond))
			a.step(p, r, na)
		}
		for range r.IntN(30) {
			nc += r.Int64N(int64(300 * time.Millisecond))
			c.step(p, r, nc)
		}
		at := max(na, nc) + r.Int64N(int64(2*time.Second)) - int64(time.Second) // the joining node's clock
		var j, self, older joinKey
		j.s, j.b = p.Join(a.s, a.b, c.s, c.b, at)
		self.s, self.b = p.Join(a.s, a.b, a.s, a.b, at)
		older.s, older.b = p.Join(common.s, common.b, a.s, a.b, at)
		require.NoError(t, p.CheckState(j.s, j.b), "trace %d: %+v", trace, p)
		for range 20 {
			tt := max(at, na, nc) + r.Int64N(int64(6*time.Second)) // see Decide: a clock behind a state's newest counter is taken to it
			cost := 1 + r.Int64N(p.Limit)
			ctx := fmt.Sprintf("trace %d: %+v at +%v cost %d", trace, p, time.Duration(tt-at), cost)
			if j.allows(p, tt, cost) {
				require.True(t, a.allows(p, tt, cost), "joined admits what a denies: %s", ctx)
				require.True(t, c.allows(p, tt, cost), "joined admits what c denies: %s\na %v\nc %v\njoined %v", ctx, a, c, j)
			}
			if p.Kind == KindFixed && p.FirstHit { // see Join: two windows started apart count as the later one
				continue
			}
			if at < max(na, nc) {
				continue // joined behind a's clock
			}
			require.Equal(t, a.allows(p, tt, cost), self.allows(p, tt, cost), "a joined with itself: %s", ctx)
			if p.Kind != KindLease { // a lease a released, which its past holds, is held again: see Join
				require.Equal(t, a.allows(p, tt, cost), older.allows(p, tt, cost), "a joined with its past: %s", ctx)
			}
		}
	}
}

// TestJoinLogKeepsWhatDenies: a Log's join over its limit keeps only the
// newest entries that fill the limit, so it holds at most Limit of them.
func TestJoinLogKeepsWhatDenies(t *testing.T) {
	p := Params{Kind: KindLog, Limit: 3, Period: time.Second}
	ms := func(m, n int64) uint64 { return logPacking.pack(m, n) }
	a := []uint64{ms(1000, 1), ms(1002, 1), ms(1004, 1)}
	c := []uint64{ms(1001, 1), ms(1002, 2), ms(1003, 1)}
	_, j := p.Join(State{}, a, State{}, c, 1004*int64(time.Millisecond))
	require.Equal(t, []uint64{ms(1002, 2), ms(1003, 1), ms(1004, 1)}, j)
}

// TestJoinLeasesKeepsTheLastEnding: two sides' leases over MaxLeases join
// to the MaxLeases that end last, ascending by end.
func TestJoinLeasesKeepsTheLastEnding(t *testing.T) {
	p := Params{Kind: KindLease, Limit: MaxLeaseCost}
	now := int64(1_700_000_000) * int64(time.Second)
	var a, c []uint64
	for i := range MaxLeases {
		a = append(a, leaseWord(now/int64(time.Millisecond)+int64(2*i+1), 1), uint64(4*i+1))
		c = append(c, leaseWord(now/int64(time.Millisecond)+int64(2*i+2), 1), uint64(4*i+3))
	}
	_, j := p.Join(State{}, a, State{}, c, now)
	require.NoError(t, p.CheckState(State{}, j))
	require.Len(t, j, 2*MaxLeases)
	require.Equal(t, c[len(c)-2:], j[len(j)-2:], "the last to end")
	require.Equal(t, now+int64(MaxLeases+1)*int64(time.Millisecond), leaseEndNs(j[0]), "the first half ended first")
}
