package window

import (
	"fmt"
	"time"
)

// MaxLeases is the most live leases one key holds, whatever its limit: a
// key's leases cost 16 bytes each, so at most 16 KiB a key. An acquire
// that would need one more is denied like one over the limit, and waits
// for the earliest lease to end.
const MaxLeases = 1024

// MaxLeaseCost is the largest cost one lease takes, and the largest limit.
const MaxLeaseCost = 1<<leaseCostBits - 1

// MaxLeaseTTL is the longest a lease lives without a renewal.
const MaxLeaseTTL = 24 * time.Hour

const leaseCostBits = 20

// Lease is a concurrency limit: at most Limit units held at once by leases
// that each end when released or when their TTL runs out, whichever comes
// first. A lease whose holder died frees its units by itself, computed
// lazily from its expiry time: no key has a timer.
//
// A key's leases are a []uint64 of pairs (expiry, id), ordered by expiry:
// the first word is the unix millisecond the lease ends at above its cost
// (leaseCostBits), the second LeaseID of its id. Neither word is ever 0 or
// all ones, so a store may use those words as markers, and a key with one
// lease fits 16 bytes. Lease itself holds no state and is safe for
// concurrent use.
//
// A clock that steps back makes live leases last longer, never shorter, so
// it never admits more than Limit; expired leases are dropped at the first
// change after their end, and a released or dropped lease never comes back.
type Lease struct {
	Limit int64
}

// LeaseDecision is the outcome of an acquire.
type LeaseDecision struct {
	Allowed  bool
	Limit    int64
	InFlight int64         // units held by live leases, this one included if admitted
	Wait     time.Duration // denied: until enough leases end for it to fit, or Never
	Reset    time.Duration // until the last live lease ends
}

// Validate reports whether the parameters can be honoured.
func (p Lease) Validate() error {
	if p.Limit < 1 || p.Limit > MaxLeaseCost {
		return fmt.Errorf("%w: a lease limit is 1 to %d", ErrLimit, MaxLeaseCost)
	}
	return nil
}

// LeaseID returns the word a lease id is kept as: 62 bits of its FNV-1a
// hash, never 0 nor all ones. Two ids of one key with the same word are the
// same lease; with at most MaxLeases a key that is a chance of 2^-42.
func LeaseID(id []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range id {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h&^(1<<63) | 1
}

// Acquire takes a lease of cost units (1 to Limit) named id (LeaseID) for
// ttl at now (unix nanoseconds) if cost fits beside the live leases of b,
// which must have room for two more words (cap(b) >= len(b)+2). An id that
// is already live is renewed instead, and admitted whatever its cost: a
// retried acquire takes no second lease. It returns the leases to keep,
// without the expired ones. Denied requests never consume.
func (p Lease) Acquire(b []uint64, now int64, id uint64, ttl time.Duration, cost int64) (LeaseDecision, []uint64) {
	now = max(now, 0)
	b = prune(b, now)
	d := LeaseDecision{Limit: p.Limit}
	sum := leaseSum(b)
	end := leaseEnd(now, ttl)
	if i := leaseFind(b, id); i >= 0 {
		cost = leaseCost(b[i])
		b = leaseInsert(leaseRemove(b, i), end, cost, id)
		d.Allowed, d.InFlight = true, sum
	} else if cost <= p.Limit-sum && len(b) < 2*MaxLeases {
		b = leaseInsert(b, end, cost, id)
		d.Allowed, d.InFlight = true, sum+cost
	} else {
		d.InFlight = sum
		d.Wait = p.waitToFit(b, sum, cost, now)
	}
	if len(b) > 0 {
		d.Reset = time.Duration(leaseEndNs(b[len(b)-2]) - now)
	}
	return d, b
}

// Renew moves the end of live lease id to now+ttl. It reports false, and
// changes nothing else, if id is not live: a lease that ended may already
// be counted for another holder, so it cannot be taken back.
func (p Lease) Renew(b []uint64, now int64, id uint64, ttl time.Duration) (bool, []uint64) {
	now = max(now, 0)
	b = prune(b, now)
	i := leaseFind(b, id)
	if i < 0 {
		return false, b
	}
	cost := leaseCost(b[i])
	return true, leaseInsert(leaseRemove(b, i), leaseEnd(now, ttl), cost, id)
}

// Release ends live lease id and reports whether it was live: false if it
// had expired, was released before or never existed.
func (p Lease) Release(b []uint64, now int64, id uint64) (bool, []uint64) {
	b = prune(b, max(now, 0))
	i := leaseFind(b, id)
	if i < 0 {
		return false, b
	}
	return true, leaseRemove(b, i)
}

// InFlight returns the units held by live leases at now, without changing b.
func (p Lease) InFlight(b []uint64, now int64) int64 {
	return leaseSum(b[2*leaseFirstLive(b, max(now, 0)):])
}

// Ended returns how many leases of b ended by now: those the next change
// at now drops, and a store counts as expired.
func (Lease) Ended(b []uint64, now int64) int { return leaseFirstLive(b, max(now, 0)) }

// Expiry returns the unix time in nanoseconds at which the last lease of b
// ends, or 0 if b holds none.
func (p Lease) Expiry(b []uint64) int64 {
	if len(b) < 2 {
		return 0
	}
	return leaseEndNs(b[len(b)-2])
}

// waitToFit returns how long until enough of the live leases b, which hold
// sum units, have ended for cost more to fit, or Never if cost exceeds the limit.
func (p Lease) waitToFit(b []uint64, sum, cost, now int64) time.Duration {
	if cost > p.Limit {
		return Never
	}
	for i := 0; i < len(b); i += 2 {
		sum -= leaseCost(b[i])
		if sum+cost <= p.Limit && len(b)-i-2 < 2*MaxLeases {
			return time.Duration(leaseEndNs(b[i]) - now)
		}
	}
	return 0
}

// checkLease reports whether b could be a Lease key's leases.
func checkLease(b []uint64) error {
	if len(b)%2 != 0 || len(b) > 2*MaxLeases {
		return ErrState
	}
	prev := uint64(0)
	for i := 0; i < len(b); i += 2 {
		w, id := b[i], b[i+1]
		if w < prev || leaseCost(w) < 1 || w == ^uint64(0) || id&1 == 0 || id>>63 != 0 {
			return ErrState
		}
		prev = w
	}
	return nil
}

// leaseEnd returns the first word of a lease ending ttl after now, with no cost.
func leaseEnd(now int64, ttl time.Duration) int64 {
	return (now + int64(ttl) + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}

func leaseCost(w uint64) int64        { return int64(w & (1<<leaseCostBits - 1)) }
func leaseEndNs(w uint64) int64       { return int64(w>>leaseCostBits) * int64(time.Millisecond) }
func leaseWord(ms, cost int64) uint64 { return uint64(ms)<<leaseCostBits | uint64(cost) }

// leaseFirstLive returns the index of the first pair of b still live at now.
func leaseFirstLive(b []uint64, now int64) int {
	n := 0
	for n < len(b)/2 && leaseEndNs(b[2*n]) <= now {
		n++
	}
	return n
}

// prune drops the leases that ended by now, which come first.
func prune(b []uint64, now int64) []uint64 {
	n := leaseFirstLive(b, now)
	if n == 0 {
		return b
	}
	return b[:copy(b, b[2*n:])]
}

func leaseSum(b []uint64) (sum int64) {
	for i := 0; i < len(b); i += 2 {
		sum += leaseCost(b[i])
	}
	return sum
}

// leaseFind returns the index of id's expiry word in b, or -1.
func leaseFind(b []uint64, id uint64) int {
	for i := 1; i < len(b); i += 2 {
		if b[i] == id {
			return i - 1
		}
	}
	return -1
}

// leaseRemove removes the pair at i.
func leaseRemove(b []uint64, i int) []uint64 {
	return b[:i+copy(b[i:], b[i+2:])]
}

// leaseInsert adds a lease in expiry order; b has room for it.
func leaseInsert(b []uint64, endMs, cost int64, id uint64) []uint64 {
	w := leaseWord(endMs, cost)
	i := len(b)
	for i > 0 && b[i-2] > w {
		i -= 2
	}
	b = b[:len(b)+2]
	copy(b[i+2:], b[i:len(b)-2])
	b[i], b[i+1] = w, id
	return b
}
