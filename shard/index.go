package shard

// index maps key hashes to slots. It is an open-addressed table of 4-byte
// entries, tag<<24 | slot+1, probed linearly from a home position taken
// from the hash's high bits; the tag is the hash's low byte, so a probe
// compares keys only for entries whose tag matches. Keys with equal hashes
// are simply several entries: the key bytes decide, so a collision never
// merges two keys.
//
// Go's map[uint64]uint32 was the first design. It costs 17 bytes a slot at a
// load that swings between 44% and 88% as its tables split, which measured 38
// bytes a key at 1M keys over 256 shards (at the bottom of the swing), more
// than the slot and key together. This table costs 4 bytes a slot and swings
// between 37% and 75%: 5–11 bytes a key. The price is hand-written probing,
// and growing rehashes a shard's keys from the arena in one go under the lock
// (measured 1.8 ms for a 49k-key shard, 12.5M keys over 256 shards), where a
// Go map splits 1024 slots at a time.
type index struct {
	table []uint32 // len is zero or a power of two
	live  int      // entries naming a slot
	dead  int      // tombstones
}

const (
	slotBits  = 24
	slotField = 1<<slotBits - 1
	maxSlots  = slotField - 1 // slot+1 must fit in the slot field
	tombstone = 1 << slotBits // tag 1, no slot: a deleted entry probes continue past
)

// fold reduces a key hash to the 32 bits the index uses. Mixing in the low
// half keeps small test hashes apart, and the shard bits, constant within a
// shard, are mixed with random high bits.
func fold(h uint64) uint32 { return uint32(h>>32 ^ h) }

func tagOf(h32 uint32) uint32 { return h32 & 0xff }

// home returns where h32's probe starts in a table of n entries.
func home(h32 uint32, n int) int { return int(uint64(h32) * uint64(n) >> 32) }

// next returns the entry after i, wrapping.
func (x *index) next(i int) int { return (i + 1) & (len(x.table) - 1) }

// full reports whether one more entry would pass the 75% load, counting tombstones.
func (x *index) full() bool { return (x.live+x.dead+1)*4 > len(x.table)*3 }

// put adds an entry for slot i with hash h32, without checking for room.
func (x *index) put(h32, i uint32) {
	j := home(h32, len(x.table))
	for x.table[j] != 0 && x.table[j] != tombstone {
		j = x.next(j)
	}
	if x.table[j] == tombstone {
		x.dead--
	}
	x.table[j] = tagOf(h32)<<slotBits | (i + 1)
	x.live++
}

// remove deletes the entry for slot i with hash h32, which must be present.
func (x *index) remove(h32, i uint32) {
	j := home(h32, len(x.table))
	for x.table[j]&slotField != i+1 {
		if x.table[j] == 0 {
			panic("shard: index lost a key") // the shard's structures disagree
		}
		j = x.next(j)
	}
	x.table[j] = tombstone
	x.live--
	x.dead++
	if x.table[x.next(j)] != 0 {
		return
	}
	// The probe ends here, so the tombstones before it end nothing: clear them.
	for ; x.table[j] == tombstone; j = (j - 1) & (len(x.table) - 1) {
		x.table[j] = 0
		x.dead--
	}
}

// sized returns an empty index that n entries fill at most half.
func sized(n int) index {
	if n == 0 {
		return index{}
	}
	size := 8
	for size < 2*n {
		size *= 2
	}
	return index{table: make([]uint32, size)}
}

func (x *index) bytes() int { return len(x.table) * 4 }
