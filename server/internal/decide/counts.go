package decide

import (
	"sync/atomic"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// Slots number the decision commands for their counters: CL.THROTTLE, the
// native RL.<kind> commands by kind, then RL.CHECK, then the lease and
// reservation commands.
const (
	SlotThrottle = 0
	SlotCheck    = int(window.KindLeaky) + 1
)

// The counters of leases and reservations follow the decision slots in
// Counts (and a connection's Tally): an RL.ACQUIRE or
// RL.RESERVE is a decision, allowed or denied, counted in
// rlstore_decisions_total as the other decisions are; an RL.RENEW,
// RL.RELEASE, RL.COMMIT or RL.CANCEL is a settlement, counted as allowed
// when it replied 1 (the lease was live, the reservation outstanding) and
// as denied when it replied 0 (it had ended: expired, settled already or
// never made), in rlstore_settlements_total. A rising count of ended
// releases says leases run out before their holders finish.
const (
	SlotAcquire = SlotCheck + 1 + iota
	SlotReserve
	SlotRenew
	SlotRelease
	SlotCommit
	SlotCancel
	Slots // how many slots there are
)

// SlotName is the command name of a decision slot.
func SlotName(slot int) string {
	switch slot {
	case SlotThrottle:
		return nameThrottle
	case SlotCheck:
		return nameCheck
	}
	if slot > SlotCheck {
		return [...]string{nameAcquire, nameReserve, nameRenew, nameRelease, nameCommit, nameCancel}[slot-SlotAcquire]
	}
	return "rl." + window.Kind(slot).String()
}

// The slots of the store's lease and reservation operations.
var (
	leaseSlot   = [...]int{shard.LeaseAcquire: SlotAcquire, shard.LeaseRenew: SlotRenew, shard.LeaseRelease: SlotRelease}
	reserveSlot = [...]int{shard.ReserveNew: SlotReserve, shard.ReserveCommit: SlotCommit, shard.ReserveCancel: SlotCancel, shard.Refund: -1}
)

// Verdicts count decisions allowed and denied. Peeks are not counted, as
// the store does not count them.
type Verdicts struct {
	Allowed, Denied atomic.Int64
}

// Count counts one decision.
func (v *Verdicts) Count(allowed bool) {
	if allowed {
		v.Allowed.Add(1)
	} else {
		v.Denied.Add(1)
	}
}

// Counts are the server's decision counters, by slot.
type Counts [Slots]Verdicts

// Tally holds a connection's decision counts not yet added to the shared
// Counts. Those are atomics every connection adds to, so on two cores
// each add moved a cache line between them; a connection adds up its own
// while it runs one command after another, and Flush adds them to the
// shared counters in one go (see the server's pending counts for when).
type Tally struct {
	n       [Slots]struct{ allowed, denied int32 }
	counted bool // n holds counts
}

// Count counts a decision in slot.
func (t *Tally) Count(slot int, allowed bool) {
	if allowed {
		t.n[slot].allowed++
	} else {
		t.n[slot].denied++
	}
	t.counted = true
}

// Flush adds every count of t to c.
func (t *Tally) Flush(c *Counts) {
	if !t.counted {
		return
	}
	for i := range t.n {
		v := &t.n[i]
		if v.allowed != 0 {
			c[i].Allowed.Add(int64(v.allowed))
		}
		if v.denied != 0 {
			c[i].Denied.Add(int64(v.denied))
		}
		*v = struct{ allowed, denied int32 }{}
	}
	t.counted = false
}

// countReserve counts a reservation command's outcome: a new one's
// decision, or whether a commit or cancel found it outstanding.
func (d *Decisions) countReserve(x *core.Session, op shard.ReserveOp, dec window.Decision, done bool) {
	if op == shard.ReserveNew {
		done = dec.Allowed
	}
	d.count(x, reserveSlot[op], done)
}
