package region

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

// restarted handles a new epoch of region p: a first contact or a restart.
func (s *Store) restarted(p int, epoch, now int64) {
	pr := &s.peers[p]
	pr.epoch, pr.echoDue = epoch, true
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
