package shard

// Scan appends copies of the keys in about count slots from cursor to dst and
// returns the cursor to continue from, 0 when the whole Map has been visited.
// As with Redis SCAN, a key present for the whole iteration is returned at
// least once; a key added or removed meanwhile may or may not be. A shard
// rebuilt during the iteration may return some keys twice.
func (m *Map) Scan(dst [][]byte, cursor uint64, count int) ([][]byte, uint64) {
	count = max(count, 1)
	si, pos := cursor>>32, uint32(cursor)
	for seen := 0; si < uint64(len(m.shards)) && seen < count; {
		s := m.shards[si]
		s.mu.Lock()
		for ; pos < s.slots.next && seen < count; pos++ {
			if sl := s.slots.at(pos); sl.key != 0 {
				dst = append(dst, append([]byte(nil), s.keys.get(sl.key)...))
			}
			seen++
		}
		done := pos >= s.slots.next
		s.mu.Unlock()
		if done {
			si, pos = si+1, 0
			seen++ // an empty shard still counts as work
		}
	}
	if si >= uint64(len(m.shards)) {
		return dst, 0
	}
	return dst, si<<32 | uint64(pos)
}
