package shard

import (
	"time"

	"github.com/rlstore/rlstore/window"
)

// PenaltyLeft returns how long a policy's penalty key, routed by route as
// DecideAll routes it, still blocks its key at now; 0 if it does not. It
// is the penalty half of DecideAll, for a caller that decides the rules
// elsewhere (a global policy, decided across regions).
func (m *Map) PenaltyLeft(route, penalty []byte, now int64) time.Duration {
	q := Multi{Penalty: penalty}
	s := m.shardFor(m.hash(route))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.penaltyLeftLocked(&q, m.hash(penalty), max(now, 0))
}

// Penalize blocks the key of penalty (routed by route) from now for d, as
// DecideAll does on a denial, and reports whether it could: a full store
// keeps the denial without its penalty.
func (m *Map) Penalize(route, penalty []byte, d time.Duration, now int64) bool {
	if d <= 0 || d > window.MaxWindow {
		return false
	}
	q := Multi{Penalty: penalty, For: d}
	s := m.shardFor(m.hash(route))
	s.mu.Lock()
	defer s.mu.Unlock()
	return m.penalizeLocked(s, &q, m.hash(penalty), max(now, 0))
}
