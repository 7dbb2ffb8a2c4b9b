package replica

import (
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
)

// slotBits is a set of slots. The handoff keeps a set of the same shape
// in the server; when it moves into its package, which may import this
// one, the two can become one.
type slotBits [cluster.Slots / 64]uint64

func slotSet(slots []int) *slotBits {
	var b slotBits
	for _, s := range slots {
		b[s/64] |= 1 << (s % 64)
	}
	return &b
}

func (b *slotBits) has(slot int) bool { return b != nil && b[slot/64]&(1<<(slot%64)) != 0 }

// keyIn returns a filter for the keys whose slot is in b, for ExportShardFunc.
func (b *slotBits) keyIn(key []byte) bool { return b.has(cluster.Slot(policy.Route(key))) }

// routeOf is the route Entry.Route wants for key: nil for a key of its own.
func routeOf(key []byte) []byte {
	if r := policy.Route(key); len(r) != len(key) {
		return r
	}
	return nil
}
