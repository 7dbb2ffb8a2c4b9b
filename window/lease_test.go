package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leaseModel is a brute-force Lease: a map of live leases, each an end
// time and a cost, pruned at every operation's now.
type leaseModel struct {
	limit  int64
	leases map[uint64][2]int64 // id → end (ns), cost
}

func newLeaseModel(limit int64) *leaseModel {
	return &leaseModel{limit: limit, leases: map[uint64][2]int64{}}
}

func (m *leaseModel) prune(now int64) {
	for id, l := range m.leases {
		if l[0] <= now {
			delete(m.leases, id)
		}
	}
}

func (m *leaseModel) sum() (s int64) {
	for _, l := range m.leases {
		s += l[1]
	}
	return s
}

func modelEnd(now int64, ttl time.Duration) int64 {
	ms := int64(time.Millisecond)
	return (now + int64(ttl) + ms - 1) / ms * ms
}

func (m *leaseModel) acquire(now int64, id uint64, ttl time.Duration, cost int64) LeaseDecision {
	now = max(now, 0)
	m.prune(now)
	d := LeaseDecision{Limit: m.limit, InFlight: m.sum()}
	if l, ok := m.leases[id]; ok {
		m.leases[id] = [2]int64{modelEnd(now, ttl), l[1]}
		d.Allowed = true
	} else if d.InFlight+cost <= m.limit && len(m.leases) < MaxLeases {
		m.leases[id] = [2]int64{modelEnd(now, ttl), cost}
		d.Allowed, d.InFlight = true, d.InFlight+cost
	} else {
		d.Wait = m.wait(now, cost)
	}
	for _, l := range m.leases {
		d.Reset = max(d.Reset, time.Duration(l[0]-now))
	}
	return d
}

// wait tries each live lease's end in turn: the first at which cost fits.
func (m *leaseModel) wait(now, cost int64) time.Duration {
	if cost > m.limit {
		return Never
	}
	var ends []int64
	for _, l := range m.leases {
		ends = append(ends, l[0])
	}
	slices.Sort(ends)
	for _, t := range ends {
		var sum, n int64
		for _, l := range m.leases {
			if l[0] > t {
				sum, n = sum+l[1], n+1
			}
		}
		if sum+cost <= m.limit && n < MaxLeases {
			return time.Duration(t - now)
		}
	}
	return 0
}

func (m *leaseModel) renew(now int64, id uint64, ttl time.Duration) bool {
	now = max(now, 0)
	m.prune(now)
	l, ok := m.leases[id]
	if ok {
		m.leases[id] = [2]int64{modelEnd(now, ttl), l[1]}
	}
	return ok
}

func (m *leaseModel) release(now int64, id uint64) bool {
	m.prune(max(now, 0))
	_, ok := m.leases[id]
	delete(m.leases, id)
	return ok
}

// leaseTrace runs one operation on a Lease and its model and checks that
// they agree, that b is a state CheckState accepts, and that the live
// leases never hold more than the limit.
type leaseTrace struct {
	t testing.TB
	p Lease
	m *leaseModel
	b []uint64
}

func newLeaseTrace(t testing.TB, limit int64) *leaseTrace {
	return &leaseTrace{t: t, p: Lease{Limit: limit}, m: newLeaseModel(limit), b: make([]uint64, 0, 2*MaxLeases+2)}
}

func (tr *leaseTrace) acquire(now int64, id uint64, ttl time.Duration, cost int64) {
	want := tr.m.acquire(now, id, ttl, cost)
	got, b := tr.p.Acquire(tr.b, now, id, ttl, cost)
	tr.b = b
	require.Equal(tr.t, want, got, "Acquire(%d, id %x, ttl %v, cost %d)", now, id, ttl, cost)
	tr.check(now)
}

func (tr *leaseTrace) renew(now int64, id uint64, ttl time.Duration) {
	want := tr.m.renew(now, id, ttl)
	got, b := tr.p.Renew(tr.b, now, id, ttl)
	tr.b = b
	require.Equal(tr.t, want, got, "Renew(%d, id %x, ttl %v)", now, id, ttl)
	tr.check(now)
}

func (tr *leaseTrace) release(now int64, id uint64) {
	want := tr.m.release(now, id)
	got, b := tr.p.Release(tr.b, now, id)
	tr.b = b
	require.Equal(tr.t, want, got, "Release(%d, id %x)", now, id)
	tr.check(now)
}

func (tr *leaseTrace) check(now int64) {
	require.NoError(tr.t, checkLease(tr.b))
	require.LessOrEqual(tr.t, len(tr.b), 2*MaxLeases)
	require.Equal(tr.t, len(tr.m.leases), len(tr.b)/2, "leases kept")
	for i := 0; i < len(tr.b); i += 2 {
		l, ok := tr.m.leases[tr.b[i+1]]
		require.True(tr.t, ok, "lease %x kept but not the model's", tr.b[i+1])
		require.Equal(tr.t, [2]int64{leaseEndNs(tr.b[i]), leaseCost(tr.b[i])}, l)
	}
	n := tr.p.InFlight(tr.b, now)
	require.LessOrEqual(tr.t, n, tr.p.Limit, "in flight over the limit")
	p := Params{Kind: KindLease, Limit: tr.p.Limit}
	require.Equal(tr.t, n, p.Count(State{}, tr.b, now))
	require.Equal(tr.t, tr.p.Expiry(tr.b), p.Expiry(State{}, tr.b))
}

func TestLeaseTable(t *testing.T) {
	p := Lease{Limit: 2}
	b := make([]uint64, 0, 8)
	a, c := LeaseID([]byte("a")), LeaseID([]byte("c"))
	d, b := p.Acquire(b, t0, a, time.Second, 1)
	assert.Equal(t, LeaseDecision{Allowed: true, Limit: 2, InFlight: 1, Reset: time.Second}, d)
	d, b = p.Acquire(b, t0, LeaseID([]byte("b")), 2*time.Second, 1)
	assert.Equal(t, LeaseDecision{Allowed: true, Limit: 2, InFlight: 2, Reset: 2 * time.Second}, d)
	d, b = p.Acquire(b, t0+msNs, c, time.Second, 1)
	assert.Equal(t, LeaseDecision{Limit: 2, InFlight: 2, Wait: time.Second - time.Millisecond, Reset: 2*time.Second - time.Millisecond}, d, "Acquire(c) = admitted, want denied until a ends")
	d, b = p.Acquire(b, t0+msNs, c, time.Second, 3)
	assert.Equal(t, Never, d.Wait, "a cost over the limit never fits")
	ok, b := p.Release(b, t0+2*msNs, a)
	assert.True(t, ok, "Release(a) of a live lease")
	ok, b = p.Release(b, t0+2*msNs, a)
	assert.False(t, ok, "Release(a) twice")
	d, b = p.Acquire(b, t0+2*msNs, c, time.Second, 1)
	assert.True(t, d.Allowed, "Acquire(c) after a's release")
	ok, b = p.Renew(b, t0+3*time.Second.Nanoseconds(), c, time.Second)
	assert.False(t, ok, "Renew(c) of an expired lease")
	ok, b = p.Release(b, t0+3*time.Second.Nanoseconds(), c)
	assert.False(t, ok, "Release(c) of an expired lease")
	assert.Empty(t, b)
}

// TestLeaseModel runs long random traces against the model: acquires of a
// few ids (so retries, renewals of dead leases and double releases are
// common), renewals, releases, and a clock that mostly moves forward but
// sometimes steps back.
func TestLeaseModel(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 32))
			limit := 1 + rng.Int64N(20)
			if seed%8 == 7 {
				limit = MaxLeaseCost // the lease count binds, not the units
			}
			tr := newLeaseTrace(t, limit)
			ids := 4 + rng.IntN(int(min(limit*2, 3000)))
			now := t0
			for range 3000 {
				now = leaseStep(rng, now)
				id := LeaseID(fmt.Append(nil, rng.IntN(ids)))
				ttl := time.Duration(1+rng.Int64N(3000)) * time.Millisecond
				switch r := rng.IntN(10); {
				case r < 5:
					tr.acquire(now, id, ttl, 1+rng.Int64N(min(limit+1, 4)))
				case r < 7:
					tr.renew(now, id, ttl)
				default:
					tr.release(now, id)
				}
			}
		})
	}
}

func leaseStep(rng *rand.Rand, now int64) int64 {
	switch r := rng.IntN(20); {
	case r == 0:
		return now - rng.Int64N(int64(2*time.Second))
	case r < 3:
		return now
	}
	return now + rng.Int64N(int64(100*time.Millisecond))
}

// TestLeaseCap fills a key with MaxLeases leases of one unit under a
// larger limit: the next is denied until the earliest ends.
func TestLeaseCap(t *testing.T) {
	tr := newLeaseTrace(t, MaxLeases*2)
	for i := range MaxLeases {
		tr.acquire(t0+int64(i), LeaseID(fmt.Append(nil, i)), time.Second, 1)
	}
	d, _ := tr.p.Acquire(slices.Clone(tr.b), t0+MaxLeases, LeaseID([]byte("x")), time.Second, 1)
	assert.False(t, d.Allowed, "Acquire past MaxLeases = admitted, want denied")
	assert.Equal(t, time.Second-MaxLeases, d.Wait)
	tr.acquire(t0+time.Second.Nanoseconds(), LeaseID([]byte("x")), time.Second, 1)
}

func TestLeaseCheckState(t *testing.T) {
	p := Params{Kind: KindLease, Limit: 5}
	require.NoError(t, p.Validate())
	id := LeaseID([]byte("a"))
	ok := []uint64{leaseWord(5, 1), id, leaseWord(6, 2), LeaseID([]byte("b"))}
	assert.NoError(t, p.CheckState(State{}, ok))
	for _, b := range [][]uint64{
		{leaseWord(5, 1)},                          // odd
		{leaseWord(6, 1), id, leaseWord(5, 1), id}, // out of order
		{leaseWord(5, 0), id},                      // no cost
		{leaseWord(5, 1), id &^ 1},                 // not an id word
		{leaseWord(5, 1), ^uint64(0)},              // a marker
		{^uint64(0), id},                           // a marker
		make([]uint64, 2*MaxLeases+2),              // too many
	} {
		assert.ErrorIs(t, p.CheckState(State{}, b), ErrState, "%x", b)
	}
	for _, bad := range []Params{{Kind: KindLease}, {Kind: KindLease, Limit: MaxLeaseCost + 1}, {Kind: KindLease, Limit: 1, Period: time.Second}} {
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
	assert.False(t, KindLease.Native())
	assert.False(t, KindLease.Stamped())
	assert.True(t, KindLease.Counters())
}

// TestLeaseDecidePeeks: Params.Decide of a Lease says whether a request
// would fit and changes nothing.
func TestLeaseDecidePeeks(t *testing.T) {
	p := Params{Kind: KindLease, Limit: 2}
	b := make([]uint64, 0, 4)
	_, b = p.Lease().Acquire(b, t0, LeaseID([]byte("a")), time.Second, 1)
	before := slices.Clone(b)
	d, b := p.Decide(nil, b, t0, 1, false)
	assert.Equal(t, Decision{Allowed: true, Limit: 2, Remaining: 0, Reset: time.Second}, d)
	d, b = p.Decide(nil, b, t0, 2, false)
	assert.Equal(t, Decision{Limit: 2, Remaining: 1, Wait: time.Second, Reset: time.Second}, d)
	assert.Equal(t, before, b)
}

func BenchmarkLease(b *testing.B) {
	for _, held := range []int{0, 100} {
		b.Run(fmt.Sprint("held=", held), func(b *testing.B) {
			p := Lease{Limit: 1000}
			buf := make([]uint64, 0, 2*MaxLeases+2)
			now := t0
			for i := range held {
				_, buf = p.Acquire(buf, now, LeaseID(fmt.Append(nil, i)), time.Hour, 1)
			}
			id := LeaseID([]byte("worker-17"))
			b.ReportAllocs()
			for b.Loop() {
				now += int64(time.Microsecond)
				_, buf = p.Acquire(buf, now, id, time.Minute, 1)
				_, buf = p.Release(buf, now, id)
			}
		})
	}
}

func FuzzLease(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0, 200, 0, 1, 2, 200, 4, 1, 255, 0, 0, 7})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) < 1 {
			return
		}
		limit := 1 + int64(prog[0]%16)
		tr := newLeaseTrace(t, limit)
		now := t0
		for i := 1; i+3 <= len(prog) && i < 3*algoFuzzMaxOps; i += 3 {
			op, arg, step := prog[i], prog[i+1], prog[i+2]
			if step&0x80 != 0 {
				now -= int64(step&0x7f) * msNs * 7
			} else {
				now += int64(step) * msNs
			}
			id := LeaseID([]byte{op >> 2 & 15})
			ttl := time.Duration(1+int(arg)*20) * time.Millisecond
			switch op & 3 {
			case 0, 1:
				tr.acquire(now, id, ttl, 1+int64(arg%uint8(limit+2)))
			case 2:
				tr.renew(now, id, ttl)
			case 3:
				tr.release(now, id)
			}
		}
	})
}

func TestReservationsLedger(t *testing.T) {
	var r Reservations
	b := make([]uint64, 0, 8)
	a, c := LeaseID([]byte("a")), LeaseID([]byte("c"))
	b = r.Add(b, t0, a, time.Second, 500)
	b = r.Add(b, t0, c, 2*time.Second, 7)
	est, ok := r.Find(b, t0, a)
	assert.True(t, ok)
	assert.EqualValues(t, 500, est)
	p := Params{Kind: KindReserve}
	require.NoError(t, p.Validate())
	require.NoError(t, p.CheckState(State{}, b))
	assert.EqualValues(t, 507, p.Count(State{}, b, t0))
	assert.Equal(t, t0+int64(2*time.Second), p.Expiry(State{}, b))
	est, ok, b = r.Take(b, t0+int64(time.Second), a)
	assert.False(t, ok, "an expired reservation is not outstanding")
	assert.Zero(t, est)
	est, ok, b = r.Take(b, t0+int64(time.Second), c)
	assert.True(t, ok)
	assert.EqualValues(t, 7, est)
	_, ok, _ = r.Take(b, t0+int64(time.Second), c)
	assert.False(t, ok, "a second take")
	full, _ := r.Full(b, t0)
	assert.False(t, full)
	assert.False(t, KindReserve.Native())
	assert.NoError(t, Params{Kind: KindReserve, Limit: 1}.Validate(), "a ledger that cancels on expiry")
	assert.Error(t, Params{Kind: KindReserve, Limit: 4}.Validate())
}
