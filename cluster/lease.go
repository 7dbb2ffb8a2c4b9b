package cluster

import (
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Lease is this node's right to serve keyed commands: it holds while a
// majority of the known member set (see Known), this node included, has
// granted one of its recent requests. The membership sends a request to
// every known member a few times a term; a member grants it when it counts
// the sender alive. A grant of a request sent at t (on this node's
// monotonic clock) keeps the lease until t + Term, so a node cut off from
// the majority, or paused, stops serving at most Term after the last
// request a majority granted, and before the majority may give its slots
// to another node: that waits TakeoverWait after the majority declares it
// dead. See docs/cluster.md, "Safety", for the proof and its assumptions.
//
// Times are nanoseconds on a monotonic clock since Origin; the methods
// whose names end in At take the time, so that a simulation can drive the
// real logic with a fake clock. ValidAt is an atomic load and a compare,
// for the request path. The zero value is not usable: make one with
// NewLease. Its methods are safe for concurrent use.
type Lease struct {
	self     string
	inc      uint64   // this process's incarnation: see Incarnation
	restored []uint64 // the earlier processes whose store this one restored, set before use: see Restored
	term     int64
	origin   time.Time

	deadline atomic.Int64  // serving holds while now < deadline
	from     atomic.Int64  // and now >= from: TakeoverWait after the lease was renewed from a lapse
	lapses   atomic.Uint64 // how many times the lease was found expired at a renewal

	saveMu sync.Mutex // held across NoteDeath's save, so that saves go in the order of the counts

	mu       sync.Mutex                    // guards the fields below
	granted  map[string]int64              // member → send time of its latest grant
	reported map[string]uint32             // granter → how many deaths of this node it last reported
	acked    map[string]uint32             // granter → the count of deaths this node acknowledges to it (see AckFor)
	onDeath  func()                        // see OnDeclaredDead
	deaths   map[string]uint32             // member → how many times this node saw it declared dead
	echoed   map[string]uint32             // member → the count of its deaths it last acknowledged here (see Grants)
	fences   map[string][]string           // granter → the members its latest answer said it fences
	fenceAt  map[string]int64              // granter → the send time of the request its latest fences answered
	lastBy   map[string]map[string]int64   // granter → fenced member → when, at the latest, granter last granted it (see NoteGrantAgesAt)
	lastMine map[string]int64              // member → when this node last granted it
	outAt    map[string]runOut             // member → when its lease has run out for sure, from the death that confirmed it (see ConfirmedAt)
	heard    map[string]struct{}           // members whose answers have come at least once
	rj       rejoins                       // what tells a rejoin after an unconfirmed death: see lease_rejoin.go
	held     bool                          // whether this process has held its lease (see declaredLocked)
	save     func(map[string]uint32) error // see KeepDeaths; nil keeps the counts in memory only
}

// NewLease returns the lease of node self, whose requests a grant keeps
// valid for term. It starts expired, but a node alone in its known set
// holds it from its first request on.
func NewLease(self string, term time.Duration) *Lease {
	return &Lease{self: self, inc: rand.Uint64() | 1, term: int64(term), origin: time.Now(),
		granted: map[string]int64{}, reported: map[string]uint32{}, acked: map[string]uint32{},
		deaths: map[string]uint32{}, echoed: map[string]uint32{}, fences: map[string][]string{}, fenceAt: map[string]int64{},
		lastBy: map[string]map[string]int64{}, lastMine: map[string]int64{}, outAt: map[string]runOut{},
		heard: map[string]struct{}{}, rj: newRejoins()}
}

// Incarnation is this process's own random number, never 0, which the
// lease's answers carry: a member that sees it change knows the process
// restarted, and forgot its fences and death counts (see lease_rejoin.go).
func (l *Lease) Incarnation() uint64 { return l.inc }

// Restored returns the incarnations of the earlier processes of this
// node that ran on its data dir, newest last (Config.Processes): its store
// holds what they left there, up to the dir's fsync policy. None without
// a data dir.
func (l *Lease) Restored() []uint64 { return l.restored }

// Origin is the time the lease's clock counts from.
func (l *Lease) Origin() time.Time { return l.origin }

// Now is the lease's clock: nanoseconds since Origin, monotonic.
func (l *Lease) Now() int64 { return int64(time.Since(l.origin)) }

// Term is how long a grant keeps the lease.
func (l *Lease) Term() time.Duration { return time.Duration(l.term) }

// TakeoverWait is how long a node waits, after it saw a member declared
// dead, before it serves the member's slots: the member's lease has run
// out by then even if its clock runs 10% slow and this node's 10% fast
// (Term × 1.1/0.9 < Term × 5/4).
func (l *Lease) TakeoverWait() time.Duration { return time.Duration(l.term * 5 / 4) }

// ValidAt reports whether this node holds its lease at now.
func (l *Lease) ValidAt(now int64) bool { return now < l.deadline.Load() }

// ServesAt reports whether this node may serve at now: it holds its
// lease, and if the lease was renewed after a lapse, TakeoverWait has
// passed since. While this node could not serve, another may have taken
// its slots over (a node on the majority's side of a partition, say),
// and that node serves them until it sees this node again and hands them
// back, or its own lease runs out, which it does within TakeoverWait of
// this node's renewal if it was cut off before it.
func (l *Lease) ServesAt(now int64) bool { return now < l.deadline.Load() && now >= l.from.Load() }

// Valid is ValidAt(Now()).
func (l *Lease) Valid() bool { return l.ValidAt(l.Now()) }

// Deadline is when the lease runs out unless renewed, on the lease's clock.
func (l *Lease) Deadline() int64 { return l.deadline.Load() }

// Lapses is how many times the lease has run out and been renewed. A
// caller that reads it, and later finds it unchanged and the lease valid,
// knows the lease held without a break in between.
func (l *Lease) Lapses() uint64 { return l.lapses.Load() }

// OnDeclaredDead makes f be called when this node learns, from a
// member's answer, that it was declared dead (a death this node has not
// acknowledged to that member; see AckFor) while its lease has run out: a
// paused node, or one cut off from the majority, learns that others may
// have served its slots since, and takes them back only from them (see the
// server's rejoin). f runs on the membership's goroutine before the answer
// can renew the lease, and must not block.
func (l *Lease) OnDeclaredDead(f func()) {
	l.mu.Lock()
	l.onDeath = f
	l.mu.Unlock()
}

// SentAt records that this node sent a round of requests at now: it
// grants itself, and the lease is renewed as far as the grants allow.
func (l *Lease) SentAt(now int64, known []string) {
	l.mu.Lock()
	l.granted[l.self] = now
	l.renewLocked(now, known)
	l.mu.Unlock()
}

// AnsweredAt records from's answer, at now, to the request this node sent
// at sent: granted or not, with the number of times from has seen this
// node declared dead.
func (l *Lease) AnsweredAt(now int64, from string, sent int64, granted bool, deaths uint32, known []string) {
	l.mu.Lock()
	f, ack := l.declaredLocked(now, from, deaths)
	l.mu.Unlock()
	if f != nil {
		f() // before the grant can renew the lease: the node's slots wait first
	}
	l.mu.Lock()
	if f != nil {
		l.rj.pending = true // a rejoin: its slots wait until a handback, or until its death proves unconfirmed
	}
	for name, n := range ack { // acknowledged only now that the slots wait
		l.ackLocked(now, name, n)
	}
	if prev, ok := l.granted[from]; granted && (!ok || sent > prev) && sent <= now {
		l.granted[from] = sent
	}
	l.renewLocked(now, known)
	l.noteCleanLocked(now, from, sent, deaths)
	u := l.decideLocked(known)
	l.mu.Unlock()
	if u != nil {
		u()
	}
}

// declaredLocked records from's count of this node's deaths. It returns
// OnDeclaredDead's function, and the counts to acknowledge once it has
// run, when some member reports a death this node has not acknowledged
// and this node's lease has run out. A first answer's count that comes
// before this process has held its lease is history it never served
// through: it is acknowledged at once. One that comes later may be of a
// death this process served through (it was cut off from that member
// before it heard it, and a majority confirmed its death meanwhile), and
// counts as any later answer's: before, it was acknowledged at once, and
// the process, never rejoining, served its older keys of slots another
// node had served after it (the simulation's seed 779). A node that holds
// its lease acknowledges nothing: the member that reported the death goes
// on refusing it, and no majority can have fenced it (see Grants), or it
// would not hold its lease.
func (l *Lease) declaredLocked(now int64, from string, deaths uint32) (func(), map[string]uint32) {
	_, heard := l.heard[from]
	l.heard[from] = struct{}{}
	l.reported[from] = deaths
	if !heard && !l.held {
		l.ackLocked(now, from, deaths)
		return nil, nil
	}
	if l.ValidAt(now) {
		return nil, nil
	}
	var ack map[string]uint32
	for name, n := range l.reported {
		if n != l.acked[name] {
			if ack == nil {
				ack = maps.Clone(l.reported)
			}
		}
	}
	if ack == nil {
		return nil, nil
	}
	if l.onDeath == nil {
		return func() {}, ack
	}
	return l.onDeath, ack
}

// AckFor is the count of its deaths of this node that member has
// reported and this node has acknowledged, which each request to member
// carries: this node acknowledges a death only after it has put every
// slot it owns to wait for a handback (OnDeclaredDead), or when it is a
// new process, which serves nothing before its slots are handed to it.
func (l *Lease) AckFor(member string) uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked[member]
}

// Grants reports whether this node grants a request from member, which it
// counts alive or not, that acknowledges ack of member's deaths: a member
// this node declared dead is fenced, refused even once it counts it alive
// again, until the member acknowledges that death. So once a majority of
// the known members fence a member (see Confirmed), the member's lease is
// renewed no more unless it has first given up serving its slots.
func (l *Lease) Grants(member string, alive bool, ack uint32) bool {
	return l.GrantsAt(l.Now(), member, alive, ack)
}

// GrantsAt is Grants at now, which a grant records (see GrantAges).
func (l *Lease) GrantsAt(now int64, member string, alive bool, ack uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.echoed[member] = ack
	ok := alive && l.deaths[member] == ack
	if ok {
		l.lastMine[member] = now
	}
	return ok
}

// AppendFenced appends the members this node fences (see Grants), which
// its answers carry.
func (l *Lease) AppendFenced(dst []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, n := range l.deaths {
		if n != l.echoed[name] {
			dst = append(dst, name)
		}
	}
	slices.Sort(dst)
	return dst
}

// GrantAgesAt returns, for each of fenced (AppendFenced's), how long ago
// at now this node last granted it: 0 before now, or since this process
// started when it never did (a member's grants from an earlier process of
// this node came before this one started). The third form of the lease's
// answers carries them, so that a node taking a dead member's slots over
// waits only until that member's lease has run out (see ConfirmedAt).
func (l *Lease) GrantAgesAt(now int64, fenced []string) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ages := make([]int64, len(fenced))
	for i, name := range fenced {
		ages[i] = max(now-l.lastMine[name], 0)
	}
	return ages
}

// NoteGrantAgesAt records, from granter's answer received at recv to the
// request this node sent at sent, how long ago granter last granted each
// member it fences (ages, GrantAgesAt's, on granter's clock): the grant
// came at the latest at recv - age on this node's clock. An answer without
// ages (ages nil: a build before them) leaves granter's grants unknown.
// Like NoteFencesAt, an answer to an older request than the latest
// recorded is ignored; call it before NoteFencesAt.
func (l *Lease) NoteGrantAgesAt(granter string, sent, recv int64, fenced []string, ages []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.fenceAt[granter]; ok && sent < at {
		return
	}
	if ages == nil || len(ages) != len(fenced) {
		delete(l.lastBy, granter)
		return
	}
	last := make(map[string]int64, len(fenced))
	for i, name := range fenced {
		last[name] = recv - ages[i]
	}
	l.lastBy[granter] = last
}

// NoteFences records the members granter fences, from its latest answer,
// to a request sent now.
func (l *Lease) NoteFences(granter string, fenced []string) { l.NoteFencesAt(granter, l.Now(), fenced) }

// NoteFencesAt records the members granter fences, from its answer to the
// request this node sent at sent; an answer to an older request than the
// latest recorded is ignored.
func (l *Lease) NoteFencesAt(granter string, sent int64, fenced []string) {
	l.mu.Lock()
	if at, ok := l.fenceAt[granter]; !ok || sent >= at {
		l.fences[granter], l.fenceAt[granter] = fenced, sent
	}
	l.mu.Unlock()
}

// Confirmed is ConfirmedAt(member, known, Now()).
func (l *Lease) Confirmed(member string, known []string) bool {
	return l.ConfirmedAt(member, known, l.Now())
}

// ConfirmedAt reports whether a majority of the known members fence member
// at now, this node included when it does: the member's own lease is then
// renewed no more, and it runs out within a term of the moment the last of
// them answered (on a node's clock that drifts at most 10%), unless the
// member gave up its slots first. A node takes a dead member's slots over
// only from then, and TakeoverWait later (see Membership and
// docs/cluster.md, "Safety"). A granter's fences count only from an answer
// to a request sent less than a term ago: a fence ends when the member
// acknowledges the death, and an answer older than that may say it fences
// a member that has since acknowledged (see lease_rejoin.go, which relies
// on stale fences expiring).
//
// When it does, it records when member's lease has run out for sure (see
// NextTakeover): a majority that granted member's lease shares a fencer
// with any quorum of the fencers, and a fencer grants member nothing more
// while it fences it, so the lease ran out TakeoverWait after the latest
// last grant among the quorum of fencers whose last grants came earliest.
// A fencer whose answers carry no grant ages counts as granting at now.
func (l *Lease) ConfirmedAt(member string, known []string, now int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lasts []int64 // each fencer's last grant to member, at the latest, on this node's clock
	for _, k := range known {
		switch {
		case k == member:
		case k == l.self:
			if d := l.deaths[member]; d != 0 && d != l.echoed[member] {
				lasts = append(lasts, min(l.lastMine[member], now))
			}
		case slices.Contains(l.fences[k], member) && now-l.fenceAt[k] < l.term:
			last, ok := l.lastBy[k][member]
			if !ok {
				last = now
			}
			lasts = append(lasts, min(last, now))
		}
	}
	q := Quorum(len(known))
	if len(lasts) < q {
		return false
	}
	slices.Sort(lasts)
	l.outAt[member] = runOut{deaths: l.deaths[member], at: lasts[q-1] + int64(l.TakeoverWait())}
	return true
}

// runOut is when a member's lease has run out for sure, on this node's
// clock, as its death's confirmation showed; deaths is the member's death
// count then, so that a later death does not use it.
type runOut struct {
	deaths uint32
	at     int64
}

// renewLocked recomputes the deadline: the Quorum(len(known))-th latest
// grant among the known members, plus the term.
func (l *Lease) renewLocked(now int64, known []string) {
	times := make([]int64, 0, len(known))
	for _, name := range known {
		if t, ok := l.granted[name]; ok {
			times = append(times, t)
		}
	}
	q := Quorum(len(known))
	d := int64(0)
	if len(times) >= q {
		slices.Sort(times)
		d = times[len(times)-q] + l.term
	}
	old := l.deadline.Load()
	if old <= now && d > now && old != 0 {
		l.lapses.Add(1) // it had run out: a break in the lease
		l.from.Store(now + int64(l.TakeoverWait()))
	}
	l.deadline.Store(d)
	if d > now {
		l.held = true
	}
}

// NoteDeath records that member name was declared dead, for Grant's
// count: from then this node fences name (see Grants). With KeepDeaths,
// the new counts are saved first, and on an error the death is not
// counted at all: this node then neither fences name nor counts toward
// confirming its death, which is safe, where a fence a restart could
// forget is not (docs/cluster.md, "Fences survive a restart").
func (l *Lease) NoteDeath(name string) error {
	l.saveMu.Lock()
	defer l.saveMu.Unlock()
	l.mu.Lock()
	next := maps.Clone(l.deaths)
	next[name]++
	save := l.save
	l.mu.Unlock()
	if save != nil {
		if err := save(next); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.deaths[name] = next[name]
	l.mu.Unlock()
	return nil
}

// KeepDeaths makes this node's fences survive a restart: the lease starts
// from saved, the death counts an earlier process of this node saved, and
// NoteDeath saves the new counts with save, which must make them durable
// before it returns, before a death fences anyone or counts toward its
// confirmation. Call it before the lease answers any request. A saved
// death counts as acknowledged until the member's next request says
// otherwise: this node refuses the member until it acknowledges the
// count, as before the restart, but says it fences the member only once a
// request shows the fence still holds, so that a fence the member ended
// before the restart never counts toward a confirmation while this node
// grants it.
func (l *Lease) KeepDeaths(saved map[string]uint32, save func(map[string]uint32) error) {
	l.saveMu.Lock()
	defer l.saveMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, n := range saved {
		l.deaths[name] = max(l.deaths[name], n)
		l.echoed[name] = l.deaths[name]
	}
	l.save = save
}

// Deaths is how many times this node saw name declared dead.
func (l *Lease) Deaths(name string) uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deaths[name]
}

// Takeover is the slots a node gained from members declared dead, and the
// time, on its lease's clock, from which it may serve them; and the slots
// it owns but may not serve at all, their state being lost to every member
// it sees (see WithLost). It is immutable; NextTakeover makes the next one
// at each view change.
type Takeover struct {
	slots [Slots / 64]uint64
	at    int64
	lost  [Slots / 64]uint64
}

// NextTakeover returns the takeover after the view change from old to nv
// at now: the slots nv gives this node that old gave to a member nv says
// died wait until that member's lease has run out for sure, with those of
// prev still waiting. That is TakeoverWait after the last grant its
// confirmation showed (see ConfirmedAt), and at most TakeoverWait after
// now: a member that moved without a confirmation (an operator forgot it)
// waits TakeoverWait from now. It returns prev when nothing died.
func (l *Lease) NextTakeover(prev *Takeover, old, nv *View, now int64) *Takeover {
	if old == nil {
		return prev
	}
	dead := map[string]bool{}
	at := int64(0)
	for _, m := range nv.Gone {
		if m.State != StateDead {
			continue
		}
		dead[m.Name] = true
		at = max(at, now+int64(l.WaitFor(m.Name, now)))
	}
	if len(dead) == 0 {
		return prev
	}
	tk := &Takeover{at: at}
	if prev != nil {
		tk.lost = prev.lost
		if now < prev.at {
			tk.slots, tk.at = prev.slots, max(tk.at, prev.at)
		}
	}
	for slot := range Slots {
		if dead[old.Table.Owner(slot).Name] && nv.Table.Owner(slot).Name == nv.Self {
			tk.slots[slot/64] |= 1 << (slot % 64)
		}
	}
	return tk
}

// WaitFor is how long, from now, a node waits before it serves slots
// whose state member held when it died: until member's lease has run out
// for sure, as its death's confirmation showed (see ConfirmedAt), and at
// most TakeoverWait, which is what a member whose death this node saw no
// confirmation of waits.
func (l *Lease) WaitFor(member string, now int64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	wait := int64(l.TakeoverWait())
	if r, ok := l.outAt[member]; ok && r.deaths == l.deaths[member] {
		wait = min(wait, max(r.at-now, 0))
	}
	return time.Duration(wait)
}

// With returns the takeover with slots waiting too, until now + wait,
// with those of t still waiting.
func (t *Takeover) With(slots []int, now int64, wait time.Duration) *Takeover {
	tk := &Takeover{at: max(now+int64(wait), 0)}
	if t != nil {
		tk.lost = t.lost
		if now < t.at {
			tk.slots, tk.at = t.slots, max(tk.at, t.at)
		}
	}
	for _, slot := range slots {
		tk.slots[slot/64] |= 1 << (slot % 64)
	}
	return tk
}

// Waits reports whether slot must not be served yet at now: it waits
// for its takeover, or is lost.
func (t *Takeover) Waits(slot int, now int64) bool {
	bit := uint64(1) << (slot % 64)
	return t != nil && (t.lost[slot/64]&bit != 0 || now < t.at && t.slots[slot/64]&bit != 0)
}

// WithLost returns the takeover with lost as its lost slots: slots whose
// owner and every member holding a copy of their state were declared dead,
// so that no member this node sees has it. A node serves none of them
// until one of those members comes back (the table then gives the slot to
// it) or an operator forgets them.
func (t *Takeover) WithLost(lost *[Slots / 64]uint64) *Takeover {
	tk := &Takeover{}
	if t != nil {
		*tk = *t
	}
	tk.lost = *lost
	return tk
}

// Lost reports whether slot is lost (see WithLost).
func (t *Takeover) Lost(slot int) bool {
	return t != nil && t.lost[slot/64]&(1<<(slot%64)) != 0
}

// LostSlots counts the lost slots.
func (t *Takeover) LostSlots() int {
	if t == nil {
		return 0
	}
	n := 0
	for _, w := range t.lost {
		n += bits.OnesCount64(w)
	}
	return n
}

// Waiting counts the slots that wait at now.
func (t *Takeover) Waiting(now int64) int {
	if t == nil || now >= t.at {
		return 0
	}
	n := 0
	for _, w := range t.slots {
		n += bits.OnesCount64(w)
	}
	return n
}
