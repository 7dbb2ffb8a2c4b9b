package shard

// MemoryUsage returns about how many bytes key's state holds: its slot, its
// index entry, its bytes in the key arena (with a length prefix from 255 bytes), and its
// block of counters outside the slot, if it has one. It is MEMORY USAGE's
// answer; false if the key does not exist.
func (m *Map) MemoryUsage(key []byte) (int64, bool) {
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(key, h)
	if !ok {
		return 0, false
	}
	n := int64(slotBytes + 4 + storedLen(len(key)))
	if sl := s.slots.at(i); sl.state[0] == extMark {
		n += 8 * int64(cap(s.ext.counters(uint32(sl.state[1]))))
	}
	return n, true
}

// MaxMemory is the limit on bytes of key state the Map was made with; 0: none.
func (m *Map) MaxMemory() int64 { return m.cfg.MaxMemory }
