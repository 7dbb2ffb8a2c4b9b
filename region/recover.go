package region

import "slices"

// A region that restarts has lost its own counts, while the others still
// hold them as they last received them. Each batch carries its sender's
// epoch (Config.Epoch); a region that sees a new epoch from another
// forgets what that one had acknowledged of it (it acknowledged it to a
// store that is gone), so it sends its units again, and sends back, as an
// echo, everything it counted of the restarted one. The restarted region
// decides a key only once every other region has echoed, or once a whole
// window (and the skew) has passed since it started, so that no unit it
// admitted before counts any more (Recovering). What no other region had
// received when it stopped is lost: at most max(e, φ) units of each
// window, which the bound in docs/regions.md adds per restart.

// restarted handles a new epoch of a member of region p: a first contact,
// a restart, or a node of a clustered region that gained slots (Gain).
// This store does not know which of its keys that member holds, so it
// forgets what region p acknowledged of every key, and echoes them all;
// unless the member named the slots it gained (gained, with Config.Slot
// set): it holds the rest as before, so only their keys are forgotten and
// echoed.
func (s *Store) restarted(p int, now int64, gained []int) {
	pr := &s.peers[p]
	pr.echoDue = true
	pr.echoGen++     // an echo made before now does not answer this epoch (Acked)
	pr.retryAt = now // resend everything it has not acknowledged, which is now everything
	var only map[int]struct{}
	if len(gained) > 0 && s.cfg.Slot != nil {
		only = make(map[int]struct{}, len(gained))
		for _, g := range gained {
			only[g] = struct{}{}
		}
		if !pr.echoAll {
			if pr.echoSlots == nil {
				pr.echoSlots = map[int]struct{}{}
			}
			for g := range only {
				pr.echoSlots[g] = struct{}{}
			}
		}
	} else {
		pr.echoAll, pr.echoSlots = true, nil
	}
	for name, k := range s.keys {
		if only != nil {
			if _, ok := only[s.cfg.Slot(name)]; !ok {
				continue
			}
		}
		k.acked[p], k.sent[p] = k.acked[p][:0], k.sent[p][:0]
		if len(k.own) > 0 {
			pr.unacked[name] = struct{}{}
		}
	}
}

// echoFor returns every unit of region p this one counts, or, when only
// some of its members' slots are to be echoed (restarted), those slots'.
func (s *Store) echoFor(p int) []Entry {
	pr := &s.peers[p]
	es := []Entry{}
	for name, k := range s.keys {
		if !pr.echoAll && pr.echoSlots != nil {
			if _, ok := pr.echoSlots[s.cfg.Slot(name)]; !ok {
				continue
			}
		}
		for _, b := range k.seen[p] {
			es = append(es, Entry{Key: name, Limit: k.lim, Bucket: b.id, Count: b.n})
		}
	}
	return es
}

// recover takes back this region's own units from region p's echo: p
// holds them, so they count as acknowledged by p. With done, p has echoed:
// this region counts all p admitted before it started.
func (s *Store) recover(p int, echo []Entry, done bool) {
	for _, e := range echo {
		if e.Limit.Validate() != nil || e.Count < 0 {
			continue
		}
		k := s.keys[e.Key]
		if k != nil && !k.lim.sameBuckets(e.Limit) {
			continue
		}
		if k == nil {
			k = s.lookup([]byte(e.Key), e.Limit, true)
		}
		k.own.raise(e.Bucket, e.Count)
		s.owned(k)
		k.acked[p].raise(e.Bucket, e.Count)
		k.sent[p].raise(e.Bucket, e.Count)
		s.resize(k)
		s.dirty[k.name] = struct{}{}
		s.measure[k.name] = struct{}{}
		s.mirror[k.name] = struct{}{}
		for q := range s.peers {
			if q != s.cfg.Self && q != p {
				s.peers[q].unacked[k.name] = struct{}{}
			}
		}
	}
	if done {
		s.peers[p].whole = false // p echoed every key of an epoch this store took as a start, or its gains since
	}
	if pr := &s.peers[p]; done && !pr.echoed {
		pr.echoed = true
		s.echoed++
		if s.echoed >= s.cfg.Regions-1 {
			s.gained = nil // every other region knows this epoch: its batches need not name the slots
		}
	}
}

// epochs returns the epochs of p's members, for an echo.
func (pr *peer) epochs() []int64 {
	out := make([]int64, 0, len(pr.members))
	for _, m := range pr.members {
		out = append(out, m.epoch)
	}
	slices.Sort(out)
	return out
}

// Gain starts a new epoch of this store: the node it runs in gained slots
// of its clustered region (a handoff, a failover) under membership view
// view, so it holds keys whose counts it may have lost with their old
// owner: what the old owner admitted and not yet copied, and what the
// other regions sent it. As after a restart, the other regions that see
// the new epoch send their units again and echo back what they count of
// this region. Keys fresh reports (those of the gained slots, and keys
// this store has not held) are Recovering until every other region has
// echoed under a view at least view; the others are decided throughout.
// The caller takes back the gained keys' own units from the key store's
// copies with Restore. slots are the cluster slots gained (fresh's keys'),
// which the batches of this epoch name (Batch.Gained): with Config.Slot
// set, the other regions resend and echo only their keys.
func (s *Store) Gain(epoch int64, view uint64, fresh func(key string) bool, slots []int) {
	s.cfg.Epoch = max(epoch, s.cfg.Epoch+1)
	switch prev := s.fresh; {
	case s.echoed < s.cfg.Regions-1 && prev == nil:
		// Still recovering from its start: every key waits already. A
		// region that has not yet echoed the start must still take the
		// epoch as a restart of all (batchFor names it no slots); one
		// that has, which echoed every key, need resend and echo only
		// the gained slots' keys.
		s.gained = unionSlots(s.gained, slots)
	case s.echoed < s.cfg.Regions-1:
		s.fresh = func(key string) bool { return prev(key) || fresh(key) } // an earlier gain still waits
		s.gained = unionSlots(s.gained, slots)                             // a region that missed its epoch learns both
	default:
		s.fresh = fresh
		s.gained = unionSlots(nil, slots)
	}
	s.gainView, s.echoed = view, 0
	for p := range s.peers {
		s.peers[p].echoed = false
	}
}

// unionSlots returns the ascending union of a (ascending) and b.
func unionSlots(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Recovered reports whether every other region has echoed this store's
// units since its epoch began.
func (s *Store) Recovered() bool { return s.echoed >= s.cfg.Regions-1 }
