package shard

import (
	"context"
	"time"
)

// Sweep frees keys whose state stopped restricting anything more than the
// grace period before now (unix nanoseconds), visiting at most budget slots in
// total. The grace period is the GC buffer: a request that read the clock a
// moment ago never finds its window half deleted. A shard whose index is mostly
// dead is rebuilt, which gives its memory back. Sweep returns the keys freed.
func (m *Map) Sweep(now int64, budget int) int {
	freed := 0
	for tries := 0; budget > 0 && tries < len(m.shards); tries++ {
		s := m.shards[m.next.Add(1)&m.mask]
		s.mu.Lock()
		n, visited := s.sweepLocked(now-int64(m.cfg.Grace), min(budget, sweepChunk))
		if s.mostlyDeadLocked() {
			s.rebuildLocked()
			s.stats.rebuilds.Add(1)
		}
		m.keys.Add(int64(-n))
		m.accountLocked(s)
		s.mu.Unlock()
		s.stats.sweeps.Add(1)
		s.stats.swept.Add(int64(n))
		freed += n
		budget -= max(visited, 1)
	}
	return freed
}

// sweepChunk bounds how many slots one shard lock holds for.
const sweepChunk = 256

// sweepLocked visits up to budget slots from s.cursor and frees those expired
// before cutoff. It returns the keys freed and the slots visited.
func (s *shard) sweepLocked(cutoff int64, budget int) (freed, visited int) {
	if s.slots.next == 0 {
		return 0, 0
	}
	for ; visited < budget && visited < int(s.slots.next); visited++ {
		if s.cursor >= s.slots.next {
			s.cursor = 0
		}
		i := s.cursor
		s.cursor++
		sl := s.slots.at(i)
		if sl.key != 0 && s.expiryLocked(sl) < cutoff {
			s.removeLocked(i, s.hash(s.keys.get(sl.key)))
			freed++
		}
	}
	return freed, visited
}

// SweepEvery runs Sweep every interval with the time from clock until ctx is done.
func (m *Map) SweepEvery(ctx context.Context, interval time.Duration, budget int, clock func() int64) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Sweep(clock(), budget)
		}
	}
}
