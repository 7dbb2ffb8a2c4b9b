package window

import (
	"math"
	"time"
)

// MaxReservations is the most outstanding reservations one key holds.
const MaxReservations = MaxLeases

// Reservations is the ledger of a key's outstanding reservations
// (RL.RESERVE): estimates already charged to the key, each waiting for its
// actual cost (RL.COMMIT) or a cancel, or for its TTL to run out, when its
// estimate stays charged. It is kept as a Lease's leases are, with the
// estimate as a lease's cost, so an estimate is at most MaxLeaseCost and a
// key holds at most MaxReservations. Reservations holds no state and is
// safe for concurrent use.
type Reservations struct{}

// Find returns the estimate of outstanding reservation id at now, or false
// if it is not outstanding (committed, cancelled, expired or never made).
func (Reservations) Find(b []uint64, now int64, id uint64) (int64, bool) {
	live := b[2*leaseFirstLive(b, max(now, 0)):]
	if i := leaseFind(live, id); i >= 0 {
		return leaseCost(live[i]), true
	}
	return 0, false
}

// Add records reservation id of estimate units ending ttl after now in b,
// which has room for two more words, and returns the ledger without the
// expired ones. The caller checked that id is not outstanding and that
// Full is false.
func (Reservations) Add(b []uint64, now int64, id uint64, ttl time.Duration, estimate int64) []uint64 {
	now = max(now, 0)
	return leaseInsert(prune(b, now), leaseEnd(now, ttl), estimate, id)
}

// Take removes outstanding reservation id and returns its estimate, or
// false if it is not outstanding; expired ones go too.
func (Reservations) Take(b []uint64, now int64, id uint64) (int64, bool, []uint64) {
	b = prune(b, max(now, 0))
	i := leaseFind(b, id)
	if i < 0 {
		return 0, false, b
	}
	est := leaseCost(b[i])
	return est, true, leaseRemove(b, i)
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

// ledgerCancels is the Limit of a ledger's Params whose expired
// reservations are given back (LedgerParams).
const ledgerCancels = 1

// LedgerParams returns the parameters of a ledger of reservations: what
// happens to one whose TTL runs out is in them, so that it travels with
// the ledger (snapshots, replicas, handoff). With cancel unset, its
// estimate stays charged and the ledger ends with its last reservation.
// With cancel set, its estimate is to be given back: the ledger never
// expires by itself while it holds any, and the store settles it (Settle).
func LedgerParams(cancel bool) Params {
	if cancel {
		return Params{Kind: KindReserve, Limit: ledgerCancels}
	}
	return Params{Kind: KindReserve}
}

// Cancels reports whether p are the parameters of a ledger whose expired
// reservations are given back.
func (p Params) Cancels() bool { return p == LedgerParams(true) }

// Settle removes the reservations of b that expired by now and returns the
// sum of their estimates, for a store to give back to the ledger's key,
// and the ledger left.
func (Reservations) Settle(b []uint64, now int64) (int64, []uint64) {
	n := leaseFirstLive(b, max(now, 0))
	if n == 0 {
		return 0, b
	}
	return leaseSum(b[:2*n]), b[:copy(b, b[2*n:])]
}

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
