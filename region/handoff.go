package region

import "encoding/binary"

// A node of a clustered region that gains slots (Gain) used to know of
// their keys only what their key store's copies brought (the old owner's
// units up to its last sync) and what the other regions echo (what they
// had received): the units the old owner admitted since, which no other
// region had yet received, were lost to the new owner, up to max(e, φ) a
// window per move. The old owner keeps the keys it lost, with their
// units. So the new owner asks the region's other nodes for what they
// hold of the gained slots' keys (Hand) and takes it (Take) before it
// decides them: the old owner's own units, exact once it stopped deciding
// them (the handoff's cut comes before the new owner's first decision),
// and what it received from the other regions. Counts only grow, and what
// any node of the region holds of a bucket is a lower bound of what the
// region (or the other region) admitted in it, so taking the larger of
// each bucket is sound whoever answers. What the old owner's acknowledgements
// were is not taken: the new epoch's echoes bring it. docs/regions.md,
// "A region made of a cluster".

// Held is what a node holds of some global keys: its region's own units
// of them, and what it received from each other region.
type Held struct {
	Own  []Entry
	Seen [][]Entry // by region index; this region's is empty
}

// Hand returns what this store holds of the keys that in reports.
func (s *Store) Hand(in func(key string) bool) *Held {
	h := &Held{Seen: make([][]Entry, s.cfg.Regions)}
	for name, k := range s.keys {
		if !in(name) {
			continue
		}
		for _, b := range k.own {
			h.Own = append(h.Own, Entry{Key: name, Limit: k.lim, Bucket: b.id, Count: b.n})
		}
		for p := range k.seen {
			if p == s.cfg.Self {
				continue
			}
			for _, b := range k.seen[p] {
				h.Seen[p] = append(h.Seen[p], Entry{Key: name, Limit: k.lim, Bucket: b.id, Count: b.n})
			}
		}
	}
	return h
}

// Take raises this store's counts by what another node of its region
// held (Hand): its own units as this region's own, which it sends the
// other regions again as not acknowledged, and the other regions' units.
// A key held here under another window keeps its own; a key of other
// regions' units only is refused past MaxRemote or the room, as a batch's
// entry is. It returns how many buckets it raised.
func (s *Store) Take(h *Held) int {
	s.gen++
	n := 0
	for _, e := range h.Own {
		if e.Limit.Validate() != nil || e.Count <= 0 {
			continue
		}
		k := s.keys[e.Key]
		if k != nil && !k.lim.sameBuckets(e.Limit) {
			continue
		}
		if k == nil {
			k = s.lookup([]byte(e.Key), e.Limit, true)
		}
		if !k.own.raise(e.Bucket, e.Count) {
			continue
		}
		n++
		k.stamp = max(k.stamp, k.lim.start(e.Bucket))
		s.resize(k)
		s.owned(k)
		s.changed(k.name)
	}
	for p, es := range h.Seen {
		if p == s.cfg.Self || p >= s.cfg.Regions {
			continue
		}
		for i := range es {
			e := &es[i]
			k := s.entryKey(e, p) // cap.go
			if k == nil {
				continue
			}
			if k.seen[p].raise(e.Bucket, e.Count) {
				n++
				s.measure[e.Key] = struct{}{}
				s.resize(k)
			}
		}
	}
	return n
}

// AppendHeld appends h's encoding: the own entries, then how many
// regions, and each region's entries.
func AppendHeld(dst []byte, h *Held) []byte {
	dst = appendEntries(dst, h.Own)
	dst = binary.AppendUvarint(dst, uint64(len(h.Seen)))
	for _, es := range h.Seen {
		dst = appendEntries(dst, es)
	}
	return dst
}

// ReadHeld decodes what AppendHeld wrote, of at most MaxRegions regions.
func ReadHeld(p []byte) (*Held, error) {
	r := reader{p: p}
	h := &Held{Own: r.entries()}
	n := r.uvarint()
	if n > MaxRegions {
		r.fail()
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		h.Seen = append(h.Seen, r.entries())
	}
	if r.err == nil && len(r.p) > 0 {
		r.err = ErrWire
	}
	if r.err != nil {
		return nil, r.err
	}
	return h, nil
}

// AppendSlots appends ascending slots' encoding (as Batch.Gained's).
func AppendSlots(dst []byte, slots []int) []byte { return appendSlots(dst, slots) }

// ReadSlots decodes what AppendSlots wrote.
func ReadSlots(p []byte) ([]int, error) {
	r := reader{p: p}
	out := r.slots()
	if r.err == nil && len(r.p) > 0 {
		r.err = ErrWire
	}
	return out, r.err
}

// HeldBytes returns about what h holds in memory, for --maxmemory while it
// is in flight.
func HeldBytes(h *Held) int64 {
	n := len(h.Own)
	for _, es := range h.Seen {
		n += len(es)
	}
	return linkEntryBytes * int64(n)
}
