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
// forgets what region p acknowledged of every key.
func (s *Store) restarted(p int, now int64) {
	pr := &s.peers[p]
	pr.echoDue = true
	pr.echoGen++     // an echo made before now does not answer this epoch (Acked)
	pr.retryAt = now // resend everything it has not acknowledged, which is now everything
	for name, k := range s.keys {
		k.acked[p], k.sent[p] = k.acked[p][:0], k.sent[p][:0]
		if len(k.own) > 0 {
			pr.unacked[name] = struct{}{}
		}
	}
}

// echoFor returns every unit of region p this one counts.
func (s *Store) echoFor(p int) []Entry {
	es := []Entry{}
	for name, k := range s.keys {
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
	if pr := &s.peers[p]; done && !pr.echoed {
		pr.echoed = true
		s.echoed++
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
// copies with Restore.
func (s *Store) Gain(epoch int64, view uint64, fresh func(key string) bool) {
	s.cfg.Epoch = max(epoch, s.cfg.Epoch+1)
	switch prev := s.fresh; {
	case s.echoed < s.cfg.Regions-1 && prev == nil:
		// Still recovering from its start: every key waits already.
	case s.echoed < s.cfg.Regions-1:
		s.fresh = func(key string) bool { return prev(key) || fresh(key) } // an earlier gain still waits
	default:
		s.fresh = fresh
	}
	s.gainView, s.echoed = view, 0
	for p := range s.peers {
		s.peers[p].echoed = false
	}
}

// Recovered reports whether every other region has echoed this store's
// units since its epoch began.
func (s *Store) Recovered() bool { return s.echoed >= s.cfg.Regions-1 }
