package window

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReservationsWide: a wide ledger keeps estimates up to MaxEstimate
// exactly, those that fill only the high word too, and its words keep a
// lease's order and markers; a narrow one widened in place keeps its
// reservations and estimates.
func TestReservationsWide(t *testing.T) {
	r := LedgerParams(false).Ledger()
	require.True(t, r.Wide)
	b := make([]uint64, 0, 16)
	ests := map[string]int64{"a": 1, "b": MaxLeaseCost, "c": MaxLeaseCost + 1, "d": 1 << 30, "e": MaxEstimate, "f": 5_000_000_000}
	ttl := time.Second
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		b = r.Add(b, t0, LeaseID([]byte(id)), ttl, ests[id])
		ttl += time.Second
	}
	p := LedgerParams(false)
	require.NoError(t, p.CheckState(State{}, b))
	var sum int64
	for id, est := range ests {
		got, ok := r.Find(b, t0, LeaseID([]byte(id)))
		assert.True(t, ok, id)
		assert.Equal(t, est, got, "Find(%s)", id)
		sum += est
	}
	assert.Equal(t, sum, p.Count(State{}, b, t0))
	est, ok, b := r.Take(b, t0, LeaseID([]byte("e")))
	require.True(t, ok)
	assert.Equal(t, int64(MaxEstimate), est)
	settled, b := r.Settle(b, t0+int64(4*time.Second)) // a, b, c and d expired
	assert.Equal(t, int64(1+MaxLeaseCost+MaxLeaseCost+1+1<<30), settled)
	got, ok := r.Find(b, t0, LeaseID([]byte("f")))
	assert.True(t, ok)
	assert.Equal(t, int64(5_000_000_000), got)

	narrow := Reservations{}
	nb := narrow.Add(make([]uint64, 0, 4), t0, LeaseID([]byte("old")), time.Minute, 700)
	require.NoError(t, Params{Kind: KindReserve}.CheckState(State{}, nb))
	r.Widen(nb)
	require.NoError(t, p.CheckState(State{}, nb))
	got, ok = r.Find(nb, t0, LeaseID([]byte("old")))
	assert.True(t, ok, "a widened ledger still finds its reservation")
	assert.Equal(t, int64(700), got)
	assert.NoError(t, Params{Kind: KindReserve, Limit: 3}.Validate())
	assert.Error(t, Params{Kind: KindReserve, Limit: 4}.Validate())
}

// BenchmarkReservations adds and takes one reservation on a ledger of 4,
// in the narrow layout (estimates to 2^20) and the wide one (to 2^41).
func BenchmarkReservations(b *testing.B) {
	for _, r := range []Reservations{{Wide: false}, {Wide: true}} {
		b.Run(map[bool]string{false: "narrow", true: "wide"}[r.Wide], func(b *testing.B) {
			buf := make([]uint64, 0, 16)
			for i := range 4 {
				buf = r.Add(buf, t0, LeaseID([]byte{byte(i)}), time.Hour, 600)
			}
			id := LeaseID([]byte("r"))
			b.ReportAllocs()
			for b.Loop() {
				buf = r.Add(buf, t0, id, time.Minute, 600)
				_, _, buf = r.Take(buf, t0, id)
			}
		})
	}
}
