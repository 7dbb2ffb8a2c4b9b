package region

// The region table holds, besides the keys this region decided, the keys
// only other regions decided: what it received of them. Those are not in
// this region's keyspace, so --max-keys does not bound them; MaxRemote
// does. A received entry that would need a new such key past MaxRemote is
// refused: not counted, and named in the acknowledgement (Ack.Refused), so
// the sender does not credit it. Its units stay unacknowledged there, so
// they stay within the sender's escrow (or reserve), which is what the
// bound's lemma needs: what a region acknowledged it counts, and counts
// only grow. The refused key costs its sender throughput (its escrow is
// held until this region has room and takes the entry, at the sender's
// next resend), never the bound.

// remoteHeld reports whether key k, which holds no units of this region,
// may take a received entry: it is one of the MaxRemote keys held for
// other regions, or there is room to make it one.
func (s *Store) remoteHeld(k *key) bool {
	switch {
	case len(k.own) > 0 || k.remote:
		return true
	case s.cfg.MaxRemote > 0 && s.remote >= s.cfg.MaxRemote:
		return false
	}
	k.remote = true
	s.remote++
	return true
}

// entryKey returns the key a received entry counts in, making it if
// needed, or nil if the entry is refused: a malformed entry, another
// window for the key than this region's, or a new key past MaxRemote.
func (s *Store) entryKey(e *Entry, from int) *key {
	if e.Limit.Validate() != nil || e.Count < 0 {
		s.stats.Refused++
		return nil
	}
	k := s.keys[e.Key]
	switch {
	case k != nil && !k.lim.sameBuckets(e.Limit):
		s.stats.Refused++ // the regions disagree on the key's window: keep ours
		return nil
	case k != nil && k.seen[from].get(e.Bucket) >= e.Count:
		return k // counted already
	case k != nil && s.remoteHeld(k):
		return k
	case k != nil:
		s.stats.KeysRefused++
		return nil
	case s.cfg.MaxRemote > 0 && s.remote >= s.cfg.MaxRemote,
		s.room != nil && !s.room(s.bytes+s.newKeyBytes(len(e.Key))+bucketBytes*int64(s.cfg.Regions)): // --maxmemory (bytes.go)
		s.stats.KeysRefused++
		return nil
	}
	k = s.lookup([]byte(e.Key), e.Limit, true)
	s.remoteHeld(k)
	return k
}

// owned notes that k holds units of this region: it is no longer one of
// the keys held for other regions.
func (s *Store) owned(k *key) {
	if k.remote {
		k.remote = false
		s.remote--
	}
}

// remove deletes key name from the table.
func (s *Store) remove(name string, k *key) {
	s.owned(k)
	s.bytes -= k.bytes
	k.bytes = 0
	delete(s.keys, name)
	delete(s.measure, name)
}

// RemoteKeys returns how many keys the table holds only for other regions
// (bounded by Config.MaxRemote).
func (s *Store) RemoteKeys() int { return s.remote }
