package replica

import (
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
)

// SlotBits is a set of slots, a bit each: the replicas' and the handoff's.
type SlotBits [cluster.Slots / 64]uint64

// SlotSet is the set of slots.
func SlotSet(slots []int) *SlotBits {
	var b SlotBits
	for _, s := range slots {
		b[s/64] |= 1 << (s % 64)
	}
	return &b
}

// Has reports whether slot is in b; a nil b has none.
func (b *SlotBits) Has(slot int) bool { return b != nil && b[slot/64]&(1<<(slot%64)) != 0 }

// KeyIn returns a filter for the keys whose slot is in b, for ExportShardFunc.
func (b *SlotBits) KeyIn(key []byte) bool { return b.Has(cluster.Slot(policy.Route(key))) }

// routeOf is the route Entry.Route wants for key: nil for a key of its own.
func routeOf(key []byte) []byte {
	if r := policy.Route(key); len(r) != len(key) {
		return r
	}
	return nil
}
