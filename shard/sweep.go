package shard

// Sweep frees keys whose state stopped restricting anything more than the
// grace period before now (unix nanoseconds), visiting at most budget slots in
// total and each slot at most once. The grace period is the GC buffer: a
// request that read the clock a moment ago never finds its window half
// deleted. A shard whose index is mostly dead is rebuilt, which gives its
// memory back. Sweep returns the keys freed.
func (m *Map) Sweep(now int64, budget int) int {
	cutoff := now - int64(m.cfg.Grace)
	freed := 0
	for tries := 0; budget > 0 && tries < len(m.shards); tries++ {
		n, visited := m.sweepShard(m.shards[m.next.Add(1)&m.mask], now, cutoff, budget)
		freed += n
		budget -= max(visited, 1)
	}
	return freed
}

// sweepChunk bounds how many slots one shard lock holds for.
const sweepChunk = 256

// sweepShard visits up to budget of s's slots, each at most once, taking the
// lock for sweepChunk slots at a time, then rebuilds s if it is mostly dead.
func (m *Map) sweepShard(s *shard, now, cutoff int64, budget int) (freed, visited int) {
	s.mu.Lock()
	left := min(budget, int(s.slots.next))
	for {
		n, v := m.sweepLocked(s, now, cutoff, min(left, sweepChunk))
		m.keys.Add(int64(-n))
		freed, visited, left = freed+n, visited+v, left-v
		if left <= 0 || v == 0 {
			break
		}
		s.mu.Unlock() // let waiting requests in
		s.mu.Lock()
	}
	if s.mostlyDeadLocked() {
		s.rebuildLocked()
		s.stats.rebuilds.Add(1)
	}
	m.accountLocked(s)
	s.mu.Unlock()
	s.stats.sweeps.Add(1)
	s.stats.swept.Add(int64(freed))
	return freed, visited
}

// sweepLocked visits up to budget slots from s.cursor, settles the ledgers
// of reservations that expired by now, and frees the keys expired before
// cutoff. It returns the keys freed and the slots visited.
func (m *Map) sweepLocked(s *shard, now, cutoff int64, budget int) (freed, visited int) {
	for ; visited < budget && visited < int(s.slots.next); visited++ {
		if s.cursor >= s.slots.next {
			s.cursor = 0
		}
		i := s.cursor
		s.cursor++
		sl := s.slots.at(i)
		if sl.key != 0 && !m.sweepSettleLocked(s, i, now) {
			freed++
		} else if sl.key != 0 && s.expiryLocked(sl) < cutoff {
			s.countEndedLocked(sl, now)
			s.removeLocked(i, s.hash(s.keys.get(sl.key, sl.keyLen())))
			freed++
		}
	}
	return freed, visited
}
