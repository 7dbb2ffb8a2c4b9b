package region

import (
	"math"
	"time"
)

// Stats are a region's counters since New.
type Stats struct {
	Admitted          int64   // units admitted here
	Refused           int64   // received entries not counted (bad, or another window for the key)
	KeysRefused       int64   // received entries not counted: a new key past Config.MaxRemote
	RemoteKeys        int     // keys held only for other regions
	Bytes             int64   // about what the table holds in memory (bytes.go)
	PeerRefused       int64   // entries of ours other regions refused (Ack.Refused)
	WindowsMeasured   int64   // windows whose total is known: every region's units in them arrived
	OvershootWindows  int64   // measured windows whose total exceeded the limit
	OvershootUnits    int64   // the sum of total − L over those windows
	WindowsUnmeasured int64   // windows given up on after Hold: some region's units never arrived
	Worst             float64 // the largest total/L measured (0 before any)
	Unacked           int64   // own units some region has not acknowledged, in windows still counted
	Keys              int
	Echoed            int         // other regions that sent back this one's units since it started
	Peers             []PeerStats // by region; Self's entry is zero
}

// PeerStats is what a region knows of another.
type PeerStats struct {
	Heard     time.Duration // since its last batch arrived
	Lag       time.Duration // age of the newest batch of ours it acknowledged
	RTT       time.Duration // of the last acknowledgement
	Offset    time.Duration // its clock minus ours, from the last acknowledgement
	SkewKnown bool
	Unacked   int // keys with units it has not acknowledged
}

// Stats returns the store's counters at now. It walks the keys with
// unacknowledged units.
func (s *Store) Stats(now int64) Stats {
	st := s.stats
	st.Keys, st.Echoed, st.RemoteKeys, st.Bytes = len(s.keys), s.echoed, s.remote, s.bytes
	st.Peers = make([]PeerStats, len(s.peers))
	seen := map[string]struct{}{}
	for p := range s.peers {
		if p == s.cfg.Self {
			continue
		}
		pr := &s.peers[p]
		st.Peers[p] = PeerStats{Heard: time.Duration(now - pr.heardAt), Lag: time.Duration(now - pr.ackedAt),
			RTT: time.Duration(pr.rtt), Offset: time.Duration(pr.offset), SkewKnown: pr.skewKnown, Unacked: len(pr.unacked)}
		for name := range pr.unacked {
			if _, ok := seen[name]; !ok {
				seen[name] = struct{}{}
				k := s.keys[name]
				_, lo := k.lim.span(now)
				st.Unacked += s.unacked(k, lo-k.lim.skewBuckets(s.cfg.MaxSkew))
			}
		}
	}
	return st
}

// Skew returns region p's clock minus this one's, as the last
// acknowledgement measured it, and whether one has.
func (s *Store) Skew(p int) (time.Duration, bool) {
	if p < 0 || p >= len(s.peers) || p == s.cfg.Self {
		return 0, false
	}
	return time.Duration(s.peers[p].offset), s.peers[p].skewKnown
}

// Split returns key name's units in the window at now: this region's and
// each other region's as last received (Self's entry is the own units).
func (s *Store) Split(name []byte, now int64) (Limit, []int64, bool) {
	k := s.keys[string(name)]
	if k == nil {
		return Limit{}, nil, false
	}
	cur, lo := k.lim.span(max(now, k.stamp))
	out := make([]int64, s.cfg.Regions)
	for p := range out {
		if p == s.cfg.Self {
			out[p] = k.own.sum(lo, k.lim.viewHi(cur))
		} else {
			out[p] = k.seen[p].sum(lo, k.lim.viewHi(cur))
		}
	}
	return k.lim, out, true
}

// measureAll measures every window whose units have all arrived.
func (s *Store) measureAll(now int64) {
	done := s.settled(now)
	for name := range s.measure {
		if s.measureKey(s.keys[name], done) {
			delete(s.measure, name)
		}
	}
}

// measureKey measures k's windows that end before done and reports
// whether none is left to measure.
func (s *Store) measureKey(k *key, done int64) bool {
	if k == nil {
		return true
	}
	all := s.merged(k, k.lim.firstOf(k.measured+1))
	for _, b := range all {
		if b.id <= k.measured {
			continue
		}
		if k.lim.start(b.id+1) > done {
			return false
		}
		s.record(k.lim.Limit, all.sum(k.lim.firstOf(b.id), b.id))
		k.measured = b.id
	}
	return true
}

// record counts one measured window's total.
func (s *Store) record(limit, total int64) {
	s.stats.WindowsMeasured++
	if over := total - limit; over > 0 {
		s.stats.OvershootWindows++
		s.stats.OvershootUnits += over
	}
	s.stats.Worst = max(s.stats.Worst, float64(total)/float64(limit))
}

// Sweep drops counts that no window counts any more and no one needs, and
// keys left with none, visiting at most budget keys. It returns how many
// keys it dropped.
func (s *Store) Sweep(now int64, budget int) int {
	s.gen++
	dropped := 0
	for name, k := range s.keys {
		if budget--; budget < 0 {
			break
		}
		if s.prune(name, k, now) {
			dropped++
		}
	}
	return dropped
}

// prune drops k's old counts and reports whether it dropped k.
func (s *Store) prune(name string, k *key, now int64) bool {
	now = max(now, k.stamp)
	_, lo := k.lim.span(now)
	w := k.lim.width()
	skew := int64(s.cfg.MaxSkew)
	keep := lo - k.lim.skewBuckets(2*s.cfg.MaxSkew)
	hold := max(0, now-int64(k.lim.Window)-2*skew-int64(s.cfg.Hold)) / w
	if k.measured < k.own.last(k.seenLast()) {
		keep = min(keep, k.lim.firstOf(k.measured+1))
	}
	s.giveUp(k, max(keep, hold))
	keep = max(keep, hold)
	for p := range k.seen {
		k.seen[p].prune(keep)
	}
	// Units not yet acknowledged stay a while longer than the window a
	// receiver gives up on, so that Final never passes units it lacks
	// while the receiver still waits for them.
	ownKeep := max(hold-k.lim.skewBuckets(2*s.cfg.MaxSkew+s.cfg.Retry), min(keep, s.oldestUnacked(k)))
	k.own.prune(ownKeep)
	for p := range k.acked {
		k.acked[p].prune(ownKeep)
		k.sent[p].prune(ownKeep)
		if p != s.cfg.Self && s.ackedAll(k, p) {
			delete(s.peers[p].unacked, name)
		}
	}
	if len(k.own) > 0 || k.seenLast() >= 0 {
		return false
	}
	if _, ok := s.dirty[name]; ok {
		return false
	}
	s.remove(name, k)
	return true
}

// seenLast returns the newest bucket any other region counted, or -1.
func (k *key) seenLast() int64 {
	last := int64(-1)
	for p := range k.seen {
		last = k.seen[p].last(last)
	}
	return last
}

// oldestUnacked returns k's oldest own bucket some region has not acknowledged.
func (s *Store) oldestUnacked(k *key) int64 {
	for _, b := range k.own {
		for p := range s.peers {
			if p != s.cfg.Self && b.n > k.acked[p].get(b.id) {
				return b.id
			}
		}
	}
	return math.MaxInt64
}

// giveUp stops waiting for windows that start before bucket keep.
func (s *Store) giveUp(k *key, keep int64) {
	all := s.merged(k, k.lim.firstOf(k.measured+1))
	for _, b := range all {
		if b.id > k.measured && k.lim.firstOf(b.id) < keep {
			s.stats.WindowsUnmeasured++
			k.measured = b.id
		}
	}
}
