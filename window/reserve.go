package window

import (
	"math"
	"time"
)

// MaxReservations is the most outstanding reservations one key holds.
const MaxReservations = MaxLeases

// MaxEstimate is the largest estimate one reservation holds: 2^41-1 units,
// so that an upload's bytes (2 TiB) fit as well as an LLM call's tokens.
const MaxEstimate = 1<<(leaseCostBits+ledgerHighBits) - 1

// A wide ledger (LedgerParams) keeps a reservation as a lease's pair of
// words with the estimate's low leaseCostBits in the first word, as a
// lease's cost, and its high ledgerHighBits above ledgerIDBits of the id's
// hash in the second. The words keep a lease's order and markers, so the
// codec and the store keep them as leases'; only ids lose bits: two of one
// key's outstanding reservations that share 42 bits of their hash (a
// chance of about 2^-23 with 1024 outstanding) are one. A narrow ledger,
// written before estimates grew, keeps the whole 62 bits and estimates of
// at most MaxLeaseCost; it is widened when it next takes a reservation.
const (
	ledgerIDBits   = 42
	ledgerHighBits = 63 - ledgerIDBits // the top bit stays 0, as a lease id's does
	ledgerIDMask   = 1<<ledgerIDBits - 1
)

// Reservations is the ledger of a key's outstanding reservations
// (RL.RESERVE): estimates already charged to the key, each waiting for its
// actual cost (RL.COMMIT) or a cancel, or for its TTL to run out. It is
// kept in a Lease's layout, so a key holds at most MaxReservations. Wide
// says how estimates are kept (see MaxEstimate); Params.Ledger returns the
// Reservations of a ledger's parameters. It is safe for concurrent use.
type Reservations struct {
	Wide bool
}

// Ledger returns how a ledger of parameters p keeps its reservations.
func (p Params) Ledger() Reservations { return Reservations{Wide: p.Limit&ledgerWide != 0} }

// estimate returns the estimate of the pair at b[i].
func (r Reservations) estimate(b []uint64, i int) int64 {
	if !r.Wide {
		return leaseCost(b[i])
	}
	return leaseCost(b[i]) | int64(b[i+1]>>ledgerIDBits)<<leaseCostBits
}

// find returns the index of reservation id's pair in b, or -1.
func (r Reservations) find(b []uint64, id uint64) int {
	if !r.Wide {
		return leaseFind(b, id)
	}
	for i := 1; i < len(b); i += 2 {
		if (b[i]^id)&ledgerIDMask == 0 {
			return i - 1
		}
	}
	return -1
}

// sum returns the estimates of b's reservations.
func (r Reservations) sum(b []uint64) (n int64) {
	for i := 0; i < len(b); i += 2 {
		n += r.estimate(b, i)
	}
	return n
}

// Find returns the estimate of outstanding reservation id at now, or false
// if it is not outstanding (committed, cancelled, expired or never made).
func (r Reservations) Find(b []uint64, now int64, id uint64) (int64, bool) {
	live := b[2*leaseFirstLive(b, max(now, 0)):]
	if i := r.find(live, id); i >= 0 {
		return r.estimate(live, i), true
	}
	return 0, false
}

// Add records reservation id of estimate units (at most MaxEstimate in a
// wide ledger, MaxLeaseCost in a narrow one) ending ttl after now in b,
// which has room for two more words, and returns the ledger without the
// expired ones. The caller checked that id is not outstanding and that
// Full is false.
func (r Reservations) Add(b []uint64, now int64, id uint64, ttl time.Duration, estimate int64) []uint64 {
	now = max(now, 0)
	low := estimate
	if r.Wide {
		low = estimate & (1<<leaseCostBits - 1)
		id = id&ledgerIDMask | uint64(estimate>>leaseCostBits)<<ledgerIDBits
	}
	return leaseInsert(prune(b, now), leaseEnd(now, ttl), low, id)
}

// Take removes outstanding reservation id and returns its estimate, or
// false if it is not outstanding; expired ones go too.
func (r Reservations) Take(b []uint64, now int64, id uint64) (int64, bool, []uint64) {
	b = prune(b, max(now, 0))
	i := r.find(b, id)
	if i < 0 {
		return 0, false, b
	}
	est := r.estimate(b, i)
	return est, true, leaseRemove(b, i)
}

// Widen rewrites narrow ledger b, in place, as a wide one: each id keeps
// the bits a wide ledger compares, and every estimate fits the low word.
func (Reservations) Widen(b []uint64) {
	for i := 1; i < len(b); i += 2 {
		b[i] &= ledgerIDMask
	}
}

// Full reports whether b holds MaxReservations outstanding at now, and if
// so how long until the earliest expires.
func (Reservations) Full(b []uint64, now int64) (bool, time.Duration) {
	now = max(now, 0)
	live := b[2*leaseFirstLive(b, now):]
	if len(live) < 2*MaxReservations {
		return false, 0
	}
	return true, time.Duration(leaseEndNs(live[0]) - now)
}

// outstanding is Params.Count of a ledger: the estimates outstanding at now.
func (r Reservations) outstanding(b []uint64, now int64) int64 {
	return r.sum(b[2*leaseFirstLive(b, max(now, 0)):])
}

// check reports whether b could be a ledger of this layout.
func (r Reservations) check(b []uint64) error {
	if !r.Wide {
		return checkLease(b)
	}
	if len(b)%2 != 0 || len(b) > 2*MaxReservations {
		return ErrState
	}
	prev := uint64(0)
	for i := 0; i < len(b); i += 2 {
		w, id := b[i], b[i+1]
		if w < prev || r.estimate(b, i) < 1 || w == ^uint64(0) || id&1 == 0 || id>>63 != 0 {
			return ErrState
		}
		prev = w
	}
	return nil
}

// The bits of a ledger's Params.Limit (LedgerParams): ledgerCancels, its
// expired reservations are given back; ledgerWide, it keeps estimates up to
// MaxEstimate. A ledger without ledgerWide was written before estimates grew.
const (
	ledgerCancels = 1
	ledgerWide    = 2
)

// LedgerParams returns the parameters of a ledger of reservations: what
// happens to one whose TTL runs out is in them, so that it travels with
// the ledger (snapshots, replicas, handoff). With cancel unset, its
// estimate stays charged and the ledger ends with its last reservation.
// With cancel set, its estimate is to be given back: the ledger never
// expires by itself while it holds any, and the store settles it (Settle).
func LedgerParams(cancel bool) Params {
	if cancel {
		return Params{Kind: KindReserve, Limit: ledgerWide | ledgerCancels}
	}
	return Params{Kind: KindReserve, Limit: ledgerWide}
}

// Cancels reports whether p are the parameters of a ledger whose expired
// reservations are given back.
func (p Params) Cancels() bool { return p.Kind == KindReserve && p.Limit&ledgerCancels != 0 }

// Settle removes the reservations of b that expired by now and returns the
// sum of their estimates, for a store to give back to the ledger's key,
// and the ledger left.
func (r Reservations) Settle(b []uint64, now int64) (int64, []uint64) {
	n := leaseFirstLive(b, max(now, 0))
	if n == 0 {
		return 0, b
	}
	return r.sum(b[:2*n]), b[:copy(b, b[2*n:])]
}

// Ended returns how many reservations of b expired by now: those the next
// change at now drops (Add, Take) or settles (Settle).
func (Reservations) Ended(b []uint64, now int64) int { return leaseFirstLive(b, max(now, 0)) }

// Due reports whether a ledger of parameters p holds a reservation that
// expired by now and is still to be settled.
func (Reservations) Due(p Params, b []uint64, now int64) bool {
	return p.Cancels() && len(b) >= 2 && leaseEndNs(b[0]) <= now
}

// expiry is Params.Expiry of a ledger: its last reservation's end, or,
// for one whose expired reservations are given back, never while it holds
// any, so that no store drops it before it is settled.
func (Reservations) expiry(p Params, b []uint64) int64 {
	if p.Cancels() && len(b) > 0 {
		return math.MaxInt64
	}
	return Lease{}.Expiry(b)
}
