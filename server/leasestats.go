package server

import (
	"io"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The counters of leases and reservations follow the decision slots in
// decisionStats (and a client's pending counts): an RL.ACQUIRE or
// RL.RESERVE is a decision, allowed or denied, counted in
// rlstore_decisions_total as the other decisions are; an RL.RENEW,
// RL.RELEASE, RL.COMMIT or RL.CANCEL is a settlement, counted as allowed
// when it replied 1 (the lease was live, the reservation outstanding) and
// as denied when it replied 0 (it had ended: expired, settled already or
// never made), in rlstore_settlements_total. A rising count of ended
// releases says leases run out before their holders finish.
const (
	slotAcquire = slotCheck + 1 + iota
	slotReserve
	slotRenew
	slotRelease
	slotCommit
	slotCancel
	leaseSlots
)

// leaseSlotName is the command name of a lease or reservation slot.
func leaseSlotName(slot int) string {
	return [...]string{"rl.acquire", "rl.reserve", "rl.renew", "rl.release", "rl.commit", "rl.cancel"}[slot-slotAcquire]
}

// The slots of the store's lease and reservation operations.
var (
	leaseSlot   = [...]int{shard.LeaseAcquire: slotAcquire, shard.LeaseRenew: slotRenew, shard.LeaseRelease: slotRelease}
	reserveSlot = [...]int{shard.ReserveNew: slotReserve, shard.ReserveCommit: slotCommit, shard.ReserveCancel: slotCancel, shard.Refund: -1}
)

// countLease counts one lease or reservation command's outcome in slot
// (none for -1, a refund).
func countLease(c *client, slot int, allowed bool) {
	if slot >= 0 {
		c.pend.decision(slot, allowed)
	}
}

// countReserve counts a reservation command's outcome: a new one's
// decision, or whether a commit or cancel found it outstanding.
func countReserve(c *client, op shard.ReserveOp, d window.Decision, done bool) {
	if op == shard.ReserveNew {
		done = d.Allowed
	}
	countLease(c, reserveSlot[op], done)
}

// writeSettleMetrics writes rlstore_settlements_total, and the leases and
// reservations that ran out (the store's st), which no command settled.
func (s *Server) writeSettleMetrics(w io.Writer, st shard.Stats) {
	for slot := slotRenew; slot < leaseSlots; slot++ {
		v := &s.decisions[slot]
		l := `rlstore_settlements_total{command="` + leaseSlotName(slot)
		counter(w, l+`",result="live"}`, v.allowed.Load())
		counter(w, l+`",result="ended"}`, v.denied.Load())
	}
	counter(w, "rlstore_leases_expired_total", st.LeasesExpired)
	counter(w, "rlstore_reservations_expired_total", st.ReservationsExpired)
}

// infoLeases are INFO stats' counts of leases and reservations: admitted
// and denied, settlements that found theirs ended, and those that ran out
// (the store's st).
func (s *Server) infoLeases(st shard.Stats) []pair {
	d := &s.decisions
	return []pair{
		{"rl_leases_allowed", d[slotAcquire].allowed.Load()},
		{"rl_leases_denied", d[slotAcquire].denied.Load()},
		{"rl_leases_ended", d[slotRenew].denied.Load() + d[slotRelease].denied.Load()},
		{"rl_leases_expired", st.LeasesExpired},
		{"rl_reservations_allowed", d[slotReserve].allowed.Load()},
		{"rl_reservations_denied", d[slotReserve].denied.Load()},
		{"rl_reservations_ended", d[slotCommit].denied.Load() + d[slotCancel].denied.Load()},
		{"rl_reservations_expired", st.ReservationsExpired},
	}
}
