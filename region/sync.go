package region

// Entry is one bucket of one key in a Batch: the sender's own units in it,
// as a total (not a difference), so that a repeated or late entry changes
// nothing.
type Entry struct {
	Key    string
	Limit  Limit
	Bucket int64
	Count  int64
}

// Batch is what one region sends another every sync interval: its own
// units that changed since the last batch (and, every Retry, those the
// receiver has not acknowledged), its clock, and Final, a time before
// which every unit it admitted has been acknowledged by the receiver.
type Batch struct {
	From    int
	Seq     uint64
	SentAt  int64 // the sender's clock
	Final   int64 // the sender's clock: units admitted before it are all acknowledged
	Entries []Entry
	// Epoch is the sender's Config.Epoch. EchoFor, when not empty, are the
	// epochs of the receiver's members the sender knows, and Echo all the
	// receiver's units the sender counts: what a restarted region (or a
	// node of one that gained slots, Gain) recovers its own counts from.
	Epoch   int64
	EchoFor []int64
	Echo    []Entry
	// Member is the sender's Config.Member: the node of its region that
	// made the batch ("" for a region of one node). A region keeps the
	// epoch and Final per member of each other region.
	Member string
	// Gained, when not empty, are the cluster slots (ascending) the
	// sender's member gained since it last recovered (Store.Gain): a new
	// epoch of that member then stands for a restart of those slots' keys
	// only (wire version 5).
	Gained []int
	// View is the receiver's membership view the batch was fanned out by
	// (Split); not on the wire. An echo recovers a node only under a view
	// at least as new as the one it gained its slots in.
	View uint64
}

// echoes reports whether b's echo answers a store of epoch e.
func (b *Batch) echoes(e int64) bool {
	for _, x := range b.EchoFor {
		if x == e {
			return true
		}
	}
	return false
}

// Ack acknowledges a Batch: the receiver now counts its entries. It echoes
// the batch's SentAt and adds its own clock at receipt, so the sender
// measures the round trip and the clock offset.
type Ack struct {
	From   int
	Seq    uint64
	SentAt int64 // the batch's
	RecvAt int64 // the receiver's clock
	Epoch  int64 // the batch's: an acknowledgement to a store that restarted since credits nothing
	// Refused are the indexes, ascending, of the batch's entries the
	// receiver did not count (cap.go): they are not acknowledged.
	Refused []int
	// Addrs, from a region made of a cluster, are where its nodes take
	// batches (wire version 4): the sender tries the next when the one it
	// sends to stops answering. The Store ignores them.
	Addrs []string
	// Missed (not on the wire) reports that the batch echoed this store's
	// epoch under a membership view older than its gain's (Batch.View),
	// which it does not take: the sender must echo again. A clustered
	// region's gateway fails such a batch's exchange (Merge).
	Missed bool
}

// ring is how many batches a region remembers per peer, to credit their
// acknowledgements. An acknowledgement of an older batch credits nothing;
// its units are resent after Retry.
const ring = 64

type sentBatch struct {
	seq     uint64
	sentAt  int64
	entries []Entry
	echo    bool
	echoGen uint64 // the peer's echoGen when the echo was made: a newer restart needs a newer echo
	kept    int    // entries counted in Store.bytes: cap(entries) and the echo's, until acknowledged (bytes.go)
}

// peer is what a region knows of another.
type peer struct {
	seq     uint64
	sent    [ring]sentBatch
	retryAt int64
	behind  bool                // a Sync passed it by: its next batch looks at all of unacked, not only dirty
	unacked map[string]struct{} // keys with own units this peer has not acknowledged
	members map[string]*member  // its nodes that sent batches, by Batch.Member
	echoDue bool                // one of its members (re)started: send it back its units until it acknowledges them
	echoGen uint64              // moves on at every restart of one of its members (restarted)
	// What the echo covers: every key (echoAll: a member restarted), or
	// the keys of these slots (members that gained them, Batch.Gained).
	echoAll   bool
	echoSlots map[int]struct{}
	echoed    bool // it sent back this region's units
	// whole: this store has not yet taken its echo since it started, so
	// it must take any new epoch of this store as a restart of every key:
	// batches to it name no gained slots (Gain).
	whole bool

	heardAt   int64 // this region's clock when its last batch arrived
	ackedAt   int64 // SentAt of the newest batch it acknowledged
	offset    int64 // its clock minus ours, from the last acknowledgement
	rtt       int64
	skewKnown bool
}

// member is what a region knows of one node of another: the epoch of its
// store and the newest Final it sent.
type member struct {
	epoch, final, heardAt int64
}

// member returns name's state in p, making it.
func (pr *peer) member(name string) *member {
	m := pr.members[name]
	if m == nil {
		if pr.members == nil {
			pr.members = map[string]*member{}
		}
		m = &member{}
		pr.members[name] = m
	}
	return m
}

// Sync returns this region's batch for each other region (nil at Self's
// index) and records what it sent. Call it every sync interval; a batch
// with no entries still carries the clock and Final. Sync is shorthand for
// SyncReady(now, nil).
func (s *Store) Sync(now int64) []*Batch { return s.SyncReady(now, nil) }

// SyncReady is Sync for the regions whose link can take a batch now
// (ready[p]; nil for all): the others get none this time (nil), and their
// next batch carries everything that changed meanwhile. A link that
// carries one exchange at a time thus sends its peer the newest counts when
// it is free, rather than batches that waited behind a slow round trip.
func (s *Store) SyncReady(now int64, ready []bool) []*Batch { return s.AppendSync(nil, now, ready) }

// AppendSync is SyncReady appending the batches to dst[:0], so that a
// caller that keeps dst allocates no slice per sync.
func (s *Store) AppendSync(dst []*Batch, now int64, ready []bool) []*Batch {
	s.gen++
	out := dst[:0]
	if out == nil {
		out = make([]*Batch, 0, s.cfg.Regions)
	}
	for p := range s.peers {
		switch {
		case p == s.cfg.Self:
			out = append(out, nil)
		case ready != nil && !ready[p]:
			s.peers[p].behind = true
			out = append(out, nil)
		default:
			out = append(out, s.batchFor(p, now))
		}
	}
	clear(s.dirty)
	s.urgent = false
	s.measureAll(now)
	return out
}

func (s *Store) batchFor(p int, now int64) *Batch {
	pr := &s.peers[p]
	retry := now >= pr.retryAt
	if retry {
		pr.retryAt = now + int64(s.cfg.Retry)
	}
	pr.seq++
	slot := &pr.sent[pr.seq%ring]
	var es []Entry // not slot's old entries: the caller may still hold that batch
	for name := range s.dirty {
		es = s.entriesFor(es, name, p, false)
	}
	if pr.behind && !retry {
		// What changed while p's link was busy: every such key has units p
		// has not acknowledged; entriesFor skips what was sent.
		for name := range pr.unacked {
			if _, ok := s.dirty[name]; !ok {
				es = s.entriesFor(es, name, p, false)
			}
		}
	}
	pr.behind = false
	if retry {
		for name := range pr.unacked {
			if _, ok := s.dirty[name]; !ok {
				es = s.entriesFor(es, name, p, true)
			}
		}
	}
	b := &Batch{From: s.cfg.Self, Seq: pr.seq, SentAt: now, Final: s.final(p, now), Entries: es, Epoch: s.cfg.Epoch, Member: s.cfg.Member}
	if !pr.whole {
		b.Gained = s.gained
	}
	if pr.echoDue && retry {
		b.EchoFor, b.Echo = pr.epochs(), s.echoFor(p)
	}
	s.keep(slot, 0)
	*slot = sentBatch{seq: pr.seq, sentAt: now, entries: es, echo: len(b.EchoFor) > 0, echoGen: pr.echoGen}
	s.keep(slot, cap(es)+cap(b.Echo))
	return b
}

// entriesFor appends name's own buckets that peer p has not been sent
// (or, with again, has not acknowledged).
func (s *Store) entriesFor(es []Entry, name string, p int, again bool) []Entry {
	k := s.keys[name]
	if k == nil {
		return es
	}
	grew := false
	for _, b := range k.own {
		if b.n > k.sent[p].get(b.id) || again && b.n > k.acked[p].get(b.id) {
			grew = k.sent[p].raise(b.id, b.n) || grew
			es = append(es, Entry{Key: name, Limit: k.lim, Bucket: b.id, Count: b.n})
		}
	}
	if grew {
		s.resize(k)
	}
	return es
}

// final returns the time before which peer p has acknowledged every unit
// this region admitted: now, or the start of the oldest bucket it has not.
func (s *Store) final(p int, now int64) int64 {
	f := now
	for name := range s.peers[p].unacked {
		k := s.keys[name]
		for _, b := range k.own {
			if b.n > k.acked[p].get(b.id) {
				f = min(f, k.lim.start(b.id))
				break
			}
		}
	}
	return f
}

// Receive counts a batch from another region and returns its
// acknowledgement. A batch from an unknown region is ignored (nil).
func (s *Store) Receive(b *Batch, now int64) *Ack {
	s.gen++
	if b.From < 0 || b.From >= s.cfg.Regions || b.From == s.cfg.Self {
		return nil
	}
	pr := &s.peers[b.From]
	m := pr.member(b.Member)
	switch {
	case b.Epoch < m.epoch:
		return nil // from a store of that member that has since restarted
	case b.Epoch > m.epoch:
		m.epoch, m.final = b.Epoch, 0
		s.restarted(b.From, now, b.Gained)
	}
	m.final = max(m.final, b.Final)
	pr.heardAt, m.heardAt = now, now
	a := &Ack{From: s.cfg.Self, Seq: b.Seq, SentAt: b.SentAt, RecvAt: now, Epoch: b.Epoch}
	for i := range b.Entries {
		e := &b.Entries[i]
		k := s.entryKey(e, b.From) // cap.go
		if k == nil {
			a.Refused = append(a.Refused, i)
			continue
		}
		if k.seen[b.From].raise(e.Bucket, e.Count) {
			s.measure[e.Key] = struct{}{}
			s.resize(k)
		}
	}
	if b.echoes(s.cfg.Epoch) && b.View >= s.gainView {
		// The echo comes with everything the sender admitted that this
		// store has not acknowledged: all of it, since this store is new.
		// Having refused some, this store does not count the sender's
		// units before it started, so it is not recovered by this echo.
		s.recover(b.From, b.Echo, len(a.Refused) == 0)
	} else if b.echoes(s.cfg.Epoch) {
		a.Missed = true
	}
	return a
}

// Acked credits an acknowledgement: the peer counts what the batch
// carried, but for the entries it refused.
func (s *Store) Acked(a *Ack, now int64) {
	s.gen++
	if a.From < 0 || a.From >= s.cfg.Regions || a.From == s.cfg.Self || a.Epoch != s.cfg.Epoch {
		return
	}
	pr := &s.peers[a.From]
	pr.rtt = max(0, now-a.SentAt)
	pr.offset = a.RecvAt - (a.SentAt+now)/2 // assumes the two legs take as long
	pr.skewKnown = true
	sb := &pr.sent[a.Seq%ring]
	if sb.seq != a.Seq {
		return
	}
	pr.ackedAt = max(pr.ackedAt, sb.sentAt)
	if sb.echo && len(a.Refused) == 0 && sb.echoGen == pr.echoGen {
		// Else echo again: the receiver did not take it (Receive), or one
		// of its members started a new epoch (a restart, a Gain) after
		// the echo was made, which named only the epochs before.
		pr.echoDue, pr.echoAll, pr.echoSlots = false, false, nil
	}
	refused := a.Refused
	s.stats.PeerRefused += int64(len(refused))
	for i, e := range sb.entries {
		if len(refused) > 0 && refused[0] == i {
			refused = refused[1:] // not counted there: its units stay unacknowledged
			continue
		}
		k := s.keys[e.Key]
		if k == nil || !k.lim.sameBuckets(e.Limit) {
			continue
		}
		if k.acked[a.From].raise(e.Bucket, e.Count) {
			s.resize(k)
		}
		if s.ackedAll(k, a.From) {
			delete(pr.unacked, e.Key)
		}
	}
	sb.entries = nil // acknowledged: the ring need not keep them (the caller's Batch still may)
	s.keep(sb, 0)
}

// ackedAll reports whether peer p acknowledged all of k's own units.
func (s *Store) ackedAll(k *key, p int) bool {
	for _, b := range k.own {
		if b.n > k.acked[p].get(b.id) {
			return false
		}
	}
	return true
}

// settled returns the time before which every region's units are known
// here: the oldest Final received, or now if that is later.
func (s *Store) settled(now int64) int64 {
	t := now
	for p := range s.peers {
		if p == s.cfg.Self {
			continue
		}
		heard := false
		for _, m := range s.peers[p].members {
			if now-m.heardAt <= int64(s.cfg.Hold) { // a member gone that long (a node that left) waits no window
				t, heard = min(t, m.final), true
			}
		}
		if !heard {
			t = min(t, 0)
		}
	}
	return t
}
