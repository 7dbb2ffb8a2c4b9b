package shard

// Scan appends copies of the keys in about count slots from cursor to dst and
// returns the cursor to continue from, 0 when the whole Map has been visited.
// As with Redis SCAN, a key present for the whole iteration is returned at
// least once; a key added or removed meanwhile may or may not be. A shard
// rebuilt during the iteration is scanned again from its start, so its keys
// may be returned twice.
func (m *Map) Scan(dst [][]byte, cursor uint64, count int) ([][]byte, uint64) {
	count = max(count, 1)
	si, gen, pos := splitCursor(cursor)
	for seen := 0; si < len(m.shards); {
		s := m.shards[si]
		s.mu.Lock()
		if s.gen&cursorGenMask != gen {
			pos = 0 // slots moved since the cursor was made
		}
		dst, pos, seen = s.scanLocked(dst, pos, seen, count)
		done := pos >= s.slots.next
		gen = s.gen
		s.mu.Unlock()
		if !done { // stopped at count
			return dst, makeCursor(si, gen, pos)
		}
		si, pos = si+1, 0
		if seen++; seen >= count && si < len(m.shards) { // an empty shard still counts as work
			return dst, makeCursor(si, 0, 0)
		}
	}
	return dst, 0
}

// scanLocked appends the keys of slots pos… to dst until seen reaches count.
func (s *shard) scanLocked(dst [][]byte, pos uint32, seen, count int) ([][]byte, uint32, int) {
	for ; pos < s.slots.next && seen < count; pos++ {
		if sl := s.slots.at(pos); sl.key != 0 {
			dst = append(dst, append([]byte(nil), s.keys.get(sl.key, sl.keyLen())...))
		}
		seen++
	}
	return dst, pos, seen
}

// A cursor is shard<<37 | gen<<24 | slot, below 2^53 so that it survives a
// float64 round trip: JavaScript clients hold cursors as Numbers, and a
// rounded cursor would name another shard. A slot fits in slotBits (24) and
// a shard in 16 bits (MaxShards), which leaves 13 bits of the shard's
// generation; that tells Scan whether the slots it had reached have since
// moved, unless the shard was rebuilt a multiple of 8192 times between two calls.
const (
	cursorGenBits   = 13
	cursorShardBits = 16
	cursorShardAt   = slotBits + cursorGenBits
	cursorGenMask   = 1<<cursorGenBits - 1
)

// MaxCursor is the largest cursor Scan returns: every one is below 2^53.
const MaxCursor = 1<<(cursorShardAt+cursorShardBits) - 1

func makeCursor(si int, gen uint16, pos uint32) uint64 {
	return uint64(si)<<cursorShardAt | uint64(gen&cursorGenMask)<<slotBits | uint64(pos)
}

func splitCursor(c uint64) (si int, gen uint16, pos uint32) {
	return int(c >> cursorShardAt), uint16(c>>slotBits) & cursorGenMask, uint32(c) & slotField
}
