package cluster

// A rejoin after an unconfirmed death. A node that learns, while its lease
// has run out, that members declared it dead (OnDeclaredDead) cannot tell
// at once whether a majority confirmed the death, so its slots wait for a
// handback and it forgets the copies it holds (the server's rejoin). If the
// death was declared only by a minority (the minority side of a split,
// while a pause elsewhere cost the majority side its lease), nobody took
// its slots over: its keys are their state, and the runner-up it waits for
// may be unable to answer (paused, then dead: its slots are then lost,
// TestRedPausedAtHeal). The lease tells the two apart as the answers come
// in, and calls OnUnconfirmed once it can prove that no majority confirmed
// any death this node acknowledged since the last such proof.
//
// Let D be the members whose reported deaths this node acknowledged since
// then (each ack change: at a rejoin, or at a member's first answer), and
// call an answer clean when it reports exactly the count this node
// acknowledges to that member: the member has no death of this node's
// that it did not acknowledge, so it fences it for no death beyond those.
// Counts only grow (a restart, which resets them, is outside the proof, as
// fences living in memory are: docs/cluster.md, Assumptions). Let settle
// be, over every member whose acknowledgement changed, the time its first
// clean answer to a request sent after the change came, plus
// TakeoverWait. A member is cleared when its latest answer is clean and
// answers a request sent at or after settle. The proof holds when D plus
// the members not cleared are fewer than Quorum(known):
//
//  1. A confirmation at Y counts, for each fencer, its answer to a request
//     Y sent less than a term ago (ConfirmedAt). A fence of a death this
//     node acknowledged to k ends when k gets the acknowledgement, before
//     k's first clean answer to a request carrying it; an answer Y got
//     before that was sent to a request Y sent before it, and counts at Y
//     for at most a term of Y's clock: 1/0.9 term of real time, 1.1/0.9 <
//     5/4 terms of this node's. So after settle no fence of a death this
//     node acknowledged counts anywhere.
//  2. A member not in D, cleared, reported at its latest answer (after
//     settle) the count it reported before this node's acknowledgements:
//     up to then it never fenced this node for a death not acknowledged
//     before, and those earlier ones had stopped counting (1, for the
//     acknowledgement before). A member in D fenced it only for deaths in
//     D's acknowledgements, up to its cleared answer.
//  3. So a majority that confirmed a death of this node before settle
//     lies within D and the members not cleared: fewer than a quorum, a
//     contradiction. A confirmation after settle counts only fences live
//     then, of deaths this node has not acknowledged: the proof's step 2
//     (docs/cluster.md) then ends this node's lease before the
//     confirmer serves, and this node acknowledges them only at a new
//     rejoin, whose slots wait again.
//
// So when OnUnconfirmed runs, no node served this node's slots because of
// a death it acknowledged: a rejoin's imports of its own slots (waiting,
// or lost because the runner-up they wait for died since) may end, and the
// slots be served from this node's own keys once its lease serves.

// rejoins is the lease's record of acknowledgements since the last proof
// that no majority confirmed them. The lease's mu guards it.
type rejoins struct {
	pending     bool                // a rejoin waits for the proof
	since       map[string]struct{} // D: members whose acknowledgement changed since the last proof
	ackedAt     map[string]int64    // member → when its acknowledgement last changed
	cleanAt     map[string]int64    // member → when its first clean answer to a request sent at or after ackedAt came
	latestSent  map[string]int64    // member → the send time of the request its latest answer answered
	latestClean map[string]bool     // member → whether that answer was clean
	inc         map[string]uint64   // member → the incarnation its latest answer told (0: an older form)
	vouch       map[string]uint64   // member → the incarnation it told while this node held its lease, latest
	onProof     func()
	proofs      uint64
}

func newRejoins() rejoins {
	return rejoins{since: map[string]struct{}{}, ackedAt: map[string]int64{}, cleanAt: map[string]int64{},
		latestSent: map[string]int64{}, latestClean: map[string]bool{}, inc: map[string]uint64{}, vouch: map[string]uint64{}}
}

// OnUnconfirmed makes f be called when this node proves, after a rejoin,
// that no majority confirmed any death of it that it acknowledged (see
// above). f runs on the membership's goroutine and must not block.
func (l *Lease) OnUnconfirmed(f func()) {
	l.mu.Lock()
	l.rj.onProof = f
	l.mu.Unlock()
}

// Unconfirmed counts the rejoins proved to follow unconfirmed deaths.
func (l *Lease) Unconfirmed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rj.proofs
}

// RejoinPending reports whether a rejoin waits for that proof.
func (l *Lease) RejoinPending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rj.pending
}

// MayBeConfirmed reports whether a rejoin waits for the proof above and
// the members in D are a quorum of known: a majority may then have
// confirmed a death this node acknowledged, and a member taken its slots
// over and served them since. Fewer, and no quorum fenced it for such a
// death with every fencer's report acknowledged here; the proof settles
// the rest.
func (l *Lease) MayBeConfirmed(known []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rj.pending {
		return false
	}
	d := 0
	for _, m := range known {
		if _, ok := l.rj.since[m]; ok && m != l.self {
			d++
		}
	}
	return d >= Quorum(len(known))
}

// ackLocked acknowledges n of member's reports of this node's deaths.
func (l *Lease) ackLocked(now int64, member string, n uint32) {
	if l.acked[member] == n {
		return
	}
	l.acked[member] = n
	l.rj.since[member] = struct{}{}
	l.rj.ackedAt[member] = now
	delete(l.rj.cleanAt, member)
}

// NoteIncarnationAt records the incarnation (0: not told) from's answer,
// at now, to the request sent at sent, tells; call it before AnsweredAt.
// An answer that comes while this node holds its lease and no rejoin
// waits vouches for that incarnation: a rejoin's proof counts from as
// cleared only while it answers from the same process (see decideLocked),
// as a process that started since may have forgotten its fences and death
// counts of this node.
func (l *Lease) NoteIncarnationAt(now int64, from string, sent int64, inc uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.rj.latestSent[from]; ok && sent < at {
		return
	}
	l.rj.inc[from] = inc
	if l.ValidAt(now) && !l.rj.pending {
		l.rj.vouch[from] = inc
	}
}

// IncarnationOf returns the incarnation member's latest answer told (see
// NoteIncarnationAt), 0 when none did.
func (l *Lease) IncarnationOf(member string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rj.inc[member]
}

// noteCleanLocked records from's answer, at now, to the request sent at
// sent, reporting deaths.
func (l *Lease) noteCleanLocked(now int64, from string, sent int64, deaths uint32) {
	clean := deaths == l.acked[from]
	if at, ok := l.rj.latestSent[from]; !ok || sent >= at {
		l.rj.latestSent[from], l.rj.latestClean[from] = sent, clean
	}
	if at, ok := l.rj.ackedAt[from]; ok && clean && sent >= at {
		if _, ok := l.rj.cleanAt[from]; !ok {
			l.rj.cleanAt[from] = now
		}
	}
}

// decideLocked returns OnUnconfirmed's function when a rejoin waits and
// the proof above holds now, over known.
func (l *Lease) decideLocked(known []string) func() {
	if !l.rj.pending {
		return nil
	}
	settle := int64(0)
	for _, m := range known {
		if _, ok := l.rj.ackedAt[m]; ok && m != l.self {
			c, ok := l.rj.cleanAt[m]
			if !ok {
				return nil // its fences may still count somewhere
			}
			settle = max(settle, c+int64(l.TakeoverWait()))
		}
	}
	maybe := 0
	for _, m := range known {
		if m == l.self {
			continue
		}
		_, inD := l.rj.since[m]
		sent, answered := l.rj.latestSent[m]
		inc := l.rj.inc[m]
		restarted := inc != 0 && inc != l.rj.vouch[m] // it may have forgotten a fence of this node
		if inD || !answered || !l.rj.latestClean[m] || sent < settle || restarted {
			maybe++
		}
	}
	if maybe >= Quorum(len(known)) {
		return nil
	}
	l.rj.pending = false
	clear(l.rj.since)
	l.rj.proofs++
	if l.rj.onProof == nil {
		return func() {}
	}
	return l.rj.onProof
}
