package replica

import (
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/shard"
)

// A slot's new owner holds the only copy of its state from the handoff's
// cut until its first full sync reaches the slot's backup: that waits for
// the owner's imports to end, then for the next shipment. After a join the
// backup is the old owner, which keeps what it handed over (KeepHanded);
// when two nodes join at once it may be a third node, which holds nothing
// of the slot. A new owner killed in that window left the slot lost (no
// survivor holds its state: server/internal/handoff, lost.go) until it came back
// (loadtest/cluster.py's kill timing: 2 kills of 5, killed 33 and 46 ms
// after the cut).
//
// So the old owner seeds that backup with the keys it handed over (RL.PEER
// SEED from owner slots payload), and the backup keeps them as the new
// owner's copies, held from it as a full sync's are: should the new owner
// die before its full sync, the backup takes the slots over from the state
// of the cut. What the owner decided after the cut is the documented loss
// of a takeover: the owner serves only while its backup's acknowledgements
// are MaxLag fresh, and this backup's count for it only from the full
// sync that gained it the slots.
//
// A seed never overwrites newer copies: a slot whose full sync from the
// owner has begun (its SYNC came) or ended is left out, and a full sync's
// drop and a seed's check and import take seedMu in turn, so one never
// runs in the other's midst. A slot this node does not back up for owner
// by its table is left out too.

// Seed keeps the entries of payload as owner's copies of slots, which a
// node handed over to owner (see above). Each message holds whole slots.
// It returns how many slots it took.
func (r *Replicator) Seed(owner string, slots []int, payload []byte) (int, error) {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	r.mu.Lock()
	t := r.table
	r.mu.Unlock()
	if t == nil {
		return 0, nil
	}
	var take SlotBits
	n := 0
	r.syncs.mu.Lock()
	pending := r.syncs.pending[owner]
	for _, slot := range slots {
		b, ok := t.RunnerUp(slot)
		if !ok || t.Owner(slot).Name != owner || b.Name != r.self || r.syncs.from[slot] == owner || pending.backed.Has(slot) {
			continue
		}
		take[slot/64] |= 1 << (slot % 64)
		n++
	}
	r.syncs.mu.Unlock()
	if n == 0 {
		return 0, nil
	}
	r.dropCopies(take.Has) // copies of the slots from their owner before the cut
	now := r.d.UnixNano()
	_, err := persistence.DecodeEntries(payload, func(e *shard.Entry) error {
		if !take.KeyIn(e.Key) {
			return nil
		}
		e.Route = routeOf(e.Key)
		if err := r.cfg.Copies.Import(*e, now); err != nil {
			r.copyErrs.Add(1) // the copies map is full (--maxmemory)
			return err
		}
		return nil
	})
	if err != nil {
		r.dropCopies(take.Has) // not held: its copies are not the slots' whole state
		return 0, err
	}
	r.syncs.mu.Lock()
	for slot := range cluster.Slots {
		if take.Has(slot) {
			r.syncs.from[slot] = owner
		}
	}
	r.syncs.mu.Unlock()
	r.seeded.Add(int64(n))
	return n, nil
}
