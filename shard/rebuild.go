package shard

// The index never shrinks and the arena only grows, so a shard whose keys have
// mostly died is copied afresh (as fastcache's cleanLocked does).
const rebuildMin = 1024 // below this many peak keys a rebuild gains nothing

// mostlyDeadLocked reports whether s is empty but holds pages, or under a
// quarter of its index, slots, key bytes or counter blocks are still live. A
// rebuild packs each of them at least half full, so a rebuilt shard is never
// mostly dead.
func (s *shard) mostlyDeadLocked() bool {
	live := s.lenLocked()
	switch {
	case live == 0:
		return s.slots.next > 0
	case s.peak >= rebuildMin && live*4 < s.peak:
		return true
	case int(s.slots.next) >= rebuildMin && live*4 < int(s.slots.next):
		return true
	case s.ext.size >= 4*extPage && s.ext.words*4 < s.ext.size:
		return true
	}
	return s.keys.size >= 4*arenaPage && s.keys.live*4 < s.keys.size
}

// rebuildLocked copies every live key into fresh, tightly sized structures.
func (s *shard) rebuildLocked() {
	old := shard{index: s.index, slots: s.slots, keys: s.keys, params: s.params, ext: s.ext}
	s.resetLocked()
	s.index = sized(old.lenLocked())
	for i := uint32(0); i < old.slots.next; i++ {
		if sl := old.slots.at(i); sl.key != 0 {
			s.copyInLocked(&old, sl)
		}
	}
}

// copyInLocked adds old's slot sl, with its key, params and counters, to s.
func (s *shard) copyInLocked(old *shard, sl *slot) {
	key := old.keys.get(sl.key, sl.keyLen())
	j, _ := s.insertLocked(key, s.hash(key))
	nsl := s.slots.at(j)
	p := old.params.get(sl.param())
	s.bindLocked(nsl, p)
	nsl.state = sl.state
	if sl.state[0] == extMark {
		b := old.ext.counters(uint32(sl.state[1]))
		nsl.state = [2]uint64{}
		s.moveCountersLocked(nsl, b, len(b)+1)
	}
}
