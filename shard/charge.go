package shard

// Charge adds n bytes held outside the Map, such as the server's policies,
// to the memory MaxMemory bounds, and reports whether it did: a positive n
// that would take the total past MaxMemory is refused and adds nothing. A
// negative n gives bytes back. Keys then meet -OOM sooner, as they should:
// the bytes are just as real.
func (m *Map) Charge(n int64) bool {
	if n > 0 && m.cfg.MaxMemory > 0 && m.bytes.Load()+n > m.cfg.MaxMemory {
		return false
	}
	m.bytes.Add(n)
	return true
}

// Hold adds n bytes held outside the Map whether or not they fit, as
// Charge does when they fit: for bytes already taken, such as a region
// table's that grew with a decision, which must count as they are. Keys
// then meet -OOM sooner.
func (m *Map) Hold(n int64) { m.bytes.Add(n) }

// Room reports whether n more bytes fit in MaxMemory.
func (m *Map) Room(n int64) bool {
	return m.cfg.MaxMemory <= 0 || m.bytes.Load()+n <= m.cfg.MaxMemory
}
